"""Imports run one way, down the layers, and never in a circle.

Every import counts: at the top of a module, inside a function (a lazy import) and under
``TYPE_CHECKING``. A module may import its own layer or a lower one; the engine never sees cases
(``datasets`` sits above ``pipeline``), evaluation reads traces and cases, the service and the
command line sit on top. A new module must be placed in :data:`LAYERS`.

One door is exempt: the package's ``__getattr__`` (``hoprag/__init__.py``) hands out public names
such as ``hoprag.record`` by loading their module when a user first asks for one. It is the
package's front door, not a dependency of the layer the package's records sit in.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[1] / "src" / "hoprag"

#: lowest first; names are top-level modules or sub-packages of hoprag
LAYERS: list[set[str]] = [
    {"errors", "__version__", "finite_numbers", "validation_messages", "cpus", "gc_pause", "locks", "disk_full",
     "json_text", "progress"},
    {"files", "records", "metrics", "hoprag"},  # the package itself: its version and the records
    {"jsonl", "yaml_input", "executors", "forks"},
    {"io", "security", "trec", "render"},
    {"ingest"},
    {"index"},
    {"llm"},
    {"pipeline"},
    {"datasets", "otlp_spans", "otlp_protobuf", "otel_span_text", "otel_trace_groups", "otel_round_trip", "otel_evidence",
     "document_resolution", "recorder", "recorder_hits"},
    {"evaluation", "otel_import", "otel_sources", "otel_scores", "telemetry", "report"},
    {"store", "gates"},
    {"service", "demo"},
    {"cli", "cli_boundary", "cli_engine", "cli_io", "cli_llm", "commands"},
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "hoprag"


def _imports() -> dict[str, set[str]]:
    """module -> the hoprag modules it imports (absolute and relative, at any depth)."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        door = {id(n) for f in tree.body if name == "hoprag" and isinstance(f, ast.FunctionDef)
                and f.name == "__getattr__" for n in ast.walk(f)}
        for node in ast.walk(tree):
            if id(node) in door:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target.startswith("hoprag") and target != name:
                    found.add(target)
        graph[name] = found
    return graph


def _layer(unit: str) -> int:
    for number, names in enumerate(LAYERS):
        if unit in names:
            return number
    raise AssertionError(f"hoprag.{unit} is in no layer: place it in LAYERS (tests/test_layers.py)")


def test_every_module_has_a_layer():
    for module in _imports():
        _layer(_unit(module))


def test_no_import_runs_up_the_layers():
    upward = []
    for module, targets in _imports().items():
        for target in targets:
            if _layer(_unit(target)) > _layer(_unit(module)):
                upward.append(f"{module} -> {target}")
    assert not upward, "imports up the layers: " + "; ".join(sorted(upward))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles_between_modules():
    graph = _imports()
    # a package's __init__ importing its own modules is not a cycle of design
    graph = {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in graph.items()}
    cycles = _cycles(graph)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_import_cycles_between_folders():
    folders: dict[str, set[str]] = {}
    for module, targets in _imports().items():
        folders.setdefault(_unit(module), set()).update(_unit(t) for t in targets if _unit(t) != _unit(module))
    cycles = _cycles(folders)
    assert not cycles, "folder cycles: " + "; ".join(" <-> ".join(c) for c in cycles)
