"""Every command's inputs and outputs, in one table, and the wrapper that makes each command honour them.

:func:`install` wraps every command of the CLI: before the command's body runs, its outputs are checked
against its inputs and against what they already hold (:mod:`hoprag.io.outputs`), and the body then
runs inside :func:`~hoprag.io.outputs.guarding`, so the library's writers check paths the command
derives itself (``OUT.judgments.jsonl``, ``shortcuts.jsonl`` beside the cases) the same way. Every
command that writes gets ``--force`` (replace an existing file of another kind).

A command that is not in :data:`COMMAND_IO` is refused by the test suite (``tests/cli/test_cli_io_registry.py``),
as is a path parameter the table does not name: a new command cannot forget the guard.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from hoprag.io.kinds import (
    CASES_JSONL,
    CORPUS_JSONL,
    HTML_REPORT,
    JSON_DOCUMENT,
    OTLP_JSON,
    RECORDS_JSONL,
    TRACES_JSONL,
    TREC_QRELS,
    TREC_RUN,
    OutputKind,
)
from hoprag.io.outputs import check_not_input, check_output, check_output_dir, guarding

__all__ = ["COMMAND_IO", "CommandIO", "DirOut", "FileOut", "command_paths", "install", "renamed_to"]


@dataclass(frozen=True)
class FileOut:
    """A parameter naming one file the command writes, of ``kind``.

    ``kind=None``: the command reads the existing file itself to decide (``run --out`` resumes traces).
    """

    param: str
    kind: OutputKind | None


@dataclass(frozen=True)
class DirOut:
    """A parameter naming a folder the command writes into (``files``: the names it writes there and
    their kinds), or replaces whole (``replaces_whole``: an index)."""

    param: str
    files: Mapping[str, OutputKind] = field(default_factory=dict)
    replaces_whole: bool = False


@dataclass(frozen=True)
class CommandIO:
    """What one command reads (``inputs``: parameter names of files or folders) and writes."""

    inputs: tuple[str, ...] = ()
    outputs: tuple[FileOut | DirOut, ...] = ()
    #: inputs the command may rewrite in place, atomically, when an output names them on purpose
    in_place: tuple[str, ...] = ()
    #: parameters that name something else than a local file (a run store URL, a server URL, an id)
    not_paths: tuple[str, ...] = ()
    #: text parameters where an empty value means something (all others refuse '')
    may_be_empty: tuple[str, ...] = ()
    #: a command line that works, shown at the end of the command's --help (and run by the tests)
    example: str = ""


_SPLIT_FILES = {"train.jsonl": CASES_JSONL, "dev.jsonl": CASES_JSONL, "test.jsonl": CASES_JSONL,
                "split.json": JSON_DOCUMENT}
_STORE = ("store",)

#: command path (``"feedback import"``) -> its inputs and outputs
COMMAND_IO: dict[str, CommandIO] = {
    "import": CommandIO(example='hoprag import hotpotqa hotpot_dev_distractor.json --out hotpot',
        inputs=("files", "corpus", "aliases"),
                        outputs=(DirOut("out_dir", {"cases.jsonl": CASES_JSONL, "corpus.jsonl": CORPUS_JSONL}),)),
    "search": CommandIO(example='hoprag search index "travel approval limit" --as-of 2026-06-30',
        inputs=("index_dir",)),
    "ask": CommandIO(example='hoprag ask index "Who approves travel over the limit?"',
        inputs=("index_dir", "engine_config"), not_paths=("base_url",)),
    # run --out: resumed, so run reads its header itself (traces of another config are refused there)
    "run": CommandIO(example='hoprag run index cases.jsonl --out traces.jsonl',
        inputs=("index_dir", "cases_file", "engine_config"), outputs=(FileOut("out_file", None),), not_paths=("base_url",)),
    "demo": CommandIO(example='hoprag demo --out demo-output',
        inputs=("data_dir", "thresholds"), outputs=(DirOut("out_dir"),), not_paths=_STORE),
    "cases audit": CommandIO(example='hoprag cases audit cases.jsonl corpus.jsonl --out shortcuts.jsonl --json audit.json',
        inputs=("cases_file", "corpus"),
                       outputs=(FileOut("record", RECORDS_JSONL), FileOut("json_out", JSON_DOCUMENT))),
    "cases split": CommandIO(example='hoprag cases split cases.jsonl --out splits',
        inputs=("cases_file",), outputs=(DirOut("out_dir", _SPLIT_FILES),)),
    "cases leakage": CommandIO(example='hoprag cases leakage train.jsonl test.jsonl --json leakage.json',
        inputs=("files",), outputs=(FileOut("json_out", JSON_DOCUMENT),)),
    "cases synth": CommandIO(example='hoprag cases synth corpus.jsonl --out generated.jsonl',
        inputs=("corpus",), outputs=(FileOut("out_file", CASES_JSONL),)),
    "eval": CommandIO(example='hoprag eval cases.jsonl traces.jsonl --json eval.json --html eval.html '
                              '--otel-out eval.otlp.jsonl',
        inputs=("cases_file", "traces_file", "oracle", "corpus", "judge_calibration"),
                      outputs=(FileOut("json_out", JSON_DOCUMENT), FileOut("html_out", HTML_REPORT),
                               FileOut("otel_out", OTLP_JSON)), not_paths=("otel_endpoint",)),
    "ablate": CommandIO(example='hoprag ablate index cases.jsonl --out ablations',
        inputs=("index_dir", "cases_file", "engine_config"), outputs=(DirOut("out_dir"),), not_paths=("base_url",)),
    "compare": CommandIO(example='hoprag compare traces-single.jsonl traces.jsonl --cases cases.jsonl --json compare.json',
        inputs=("run_a", "run_b", "cases_file"), outputs=(FileOut("json_out", JSON_DOCUMENT),)),
    "release": CommandIO(example='hoprag release cases.jsonl traces.jsonl --policy release.yaml --json release.json',
        inputs=("cases_file", "traces_file", "policy_file"),
                         outputs=(FileOut("json_out", JSON_DOCUMENT),)),
    "trec export": CommandIO(example='hoprag trec export cases.jsonl traces.jsonl --qrels qrels.txt --run run.txt',
        inputs=("cases_file", "traces_file"),
                             outputs=(FileOut("qrels", TREC_QRELS), FileOut("run", TREC_RUN))),
    "gate run": CommandIO(example='hoprag gate run corpus.jsonl --cases cases.jsonl --out gated',
        inputs=("corpora", "cases", "feedback"), outputs=(DirOut("out_dir"),), not_paths=_STORE),
    "gate baseline": CommandIO(example='hoprag gate baseline --run-id RUN_ID',
        not_paths=_STORE),
    "gate check": CommandIO(example='hoprag gate check --run-id RUN_ID --thresholds thresholds.yaml',
        inputs=("thresholds",), not_paths=_STORE),
    "gate diff": CommandIO(example='hoprag gate diff RUN_A RUN_B',
        not_paths=_STORE),
    "trec eval": CommandIO(example='hoprag trec eval qrels.txt run.txt -m nDCG@10 -m AP',
        inputs=("qrels", "run")),
    "feedback import": CommandIO(example='hoprag feedback import feedback.jsonl --run-id RUN_ID',
        inputs=("file",), not_paths=_STORE),
    "index": CommandIO(example='hoprag index corpus.jsonl --out index',
        inputs=("corpora", "delete_file", "thresholds"), outputs=(DirOut("out_dir", replaces_whole=True),),
                      not_paths=_STORE),
    "judge calibrate": CommandIO(example='hoprag judge calibrate cases.jsonl --out calibration.json',
        inputs=("cases_file", "judgments_file"), outputs=(FileOut("out_file", JSON_DOCUMENT),),
                                 not_paths=("base_url",)),
    "cases pool": CommandIO(example='hoprag cases pool index cases.jsonl --out pool',
        inputs=("index_dir", "cases_file"), outputs=(DirOut("out_dir"),)),
    "cases judgments": CommandIO(example='hoprag cases judgments pool judgments.jsonl --out qrels.txt --cases-out judged-cases.jsonl',
        inputs=("pool_dir", "judgments_file", "cases_file"),
                             outputs=(FileOut("out_file", TREC_QRELS), FileOut("cases_out", CASES_JSONL))),
    # `traces redact T --out T` rewrites T in place (atomically): documented, so declared here
    "traces redact": CommandIO(example='hoprag traces redact traces.jsonl --out traces.shared.jsonl',
        inputs=("traces_file", "patterns_file"), outputs=(FileOut("out_file", TRACES_JSONL),),
                        in_place=("traces_file",)),
    "runs list": CommandIO(example='hoprag runs list --status failed',
        not_paths=_STORE),
    "runs rm": CommandIO(example='hoprag runs rm RUN_ID',
        not_paths=_STORE),
    "serve": CommandIO(example='hoprag serve index --port 8000',
        inputs=("index_dir", "tokens", "thresholds", "cases", "engine_config"), not_paths=(*_STORE, "base_url")),
    "traces import": CommandIO(example='hoprag traces import spans.jsonl --out otel-traces.jsonl',
        inputs=("spans_file", "corpus", "index", "cases_file"), outputs=(FileOut("out_file", TRACES_JSONL),)),
}

FORCE_HELP = "replace an existing output file even when it holds another kind of file"


def _paths(value: Any) -> Iterator[Path]:
    """The local paths a parameter value names (lists flattened; URLs and None skipped)."""
    values = value if isinstance(value, (list, tuple)) else [value]
    for item in values:
        if item is None or isinstance(item, bool):
            continue
        text = os.fspath(item) if isinstance(item, (str, os.PathLike)) else None
        if not text or "://" in text:
            continue
        yield Path(text)


def _flag(param: inspect.Parameter) -> str:
    """How a user spells ``param``: its long option, or its argument's name in capitals."""
    info = param.default
    decls = getattr(info, "param_decls", None) or ()
    if isinstance(info, typer.models.OptionInfo):
        longs = [d for d in decls if d.startswith("--")]
        if longs:
            return longs[0].split("/")[0]
        return "--" + param.name.replace("_", "-")
    return param.name.upper()


#: the largest whole number an option takes unless it sets its own bound (counts, seeds, sizes)
MAX_INT = 10**15


def _values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _check_values(values: Mapping[str, Any], flags: Mapping[str, str], io: CommandIO,
                  defaults: Mapping[str, Any]) -> None:
    """Refuse what no command can use: NaN or infinite numbers, absurdly large whole numbers, empty text
    (a command's own default is always accepted)."""
    from hoprag.errors import ConfigError

    for name, value in values.items():
        if name in defaults and value == defaults[name]:
            continue
        what = flags.get(name, name)
        for item in _values(value):
            if isinstance(item, bool) or item is None:
                continue
            if isinstance(item, float) and not math.isfinite(item):
                raise ConfigError(f"{what} is {item}, not a finite number. Fix: pass a number such as 0.5")
            if isinstance(item, int) and abs(item) > MAX_INT:
                raise ConfigError(f"{what} is {str(item)[:20]}… ({len(str(abs(item)))} digits), far beyond any "
                                  f"usable value. Fix: pass a number of at most {MAX_INT:,}")
            if isinstance(item, (str, os.PathLike)) and not os.fspath(item).strip() and name not in io.may_be_empty:
                raise ConfigError(f"{what} is empty. Fix: give {what} a value, or leave the option out")


def _check_inputs(paths: list[tuple[str, Path]]) -> None:
    """Refuse an input that is neither a regular file nor a directory (a FIFO or device would block)."""
    from hoprag.errors import InputError

    for what, path in paths:
        try:
            mode = path.stat().st_mode
        except OSError:
            continue  # missing or unreadable: the command's reader says which, with its fix
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device or socket, not a regular file"
            raise InputError(f"{what} is {kind}; hoprag reads files it can read to the end", source=str(path),
                             fix=f"write the data to a file first and pass that file to {what}")


def _check_outputs(io: CommandIO, values: Mapping[str, Any], flags: Mapping[str, str]) -> None:
    for output in io.outputs:
        what = flags.get(output.param, output.param)
        for path in _paths(values.get(output.param)):
            if isinstance(output, DirOut):
                check_output_dir(path, what=what, replaces_whole=output.replaces_whole)
                for name, kind in output.files.items():
                    check_output(path / name, kind, what=f"{what} (its {name})")
            elif output.kind is None:  # the command judges the existing file; the input rule still holds
                check_not_input(path, what=what)
            else:
                check_output(path, output.kind, what=what)


def _guarded(callback: Callable[..., Any], io: CommandIO) -> Callable[..., Any]:
    signature = inspect.signature(callback, eval_str=True)
    flags = {p.name: _flag(p) for p in signature.parameters.values()}
    defaults = {p.name: getattr(p.default, "default", None) for p in signature.parameters.values()}
    adds_force = bool(io.outputs) and "force" not in signature.parameters

    @functools.wraps(callback)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        force = bool(kwargs.pop("force", False)) if adds_force else False
        _check_values(kwargs, flags, io, defaults)
        named = [(flags.get(name, name), p) for name in io.inputs for p in _paths(kwargs.get(name))]
        _check_inputs(named)
        inputs = [p for _, p in named]
        in_place = [p for name in io.in_place for p in _paths(kwargs.get(name))]
        with guarding(inputs, force=force, in_place=in_place):
            _check_outputs(io, kwargs, flags)
            return callback(*args, **kwargs)

    params = list(signature.parameters.values())
    annotations = {p.name: p.annotation for p in params if p.annotation is not inspect.Parameter.empty}
    if adds_force:
        params.append(inspect.Parameter("force", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=bool,
                                        default=typer.Option(False, "--force", help=FORCE_HELP)))
        annotations["force"] = bool
    guarded.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    guarded.__annotations__ = {**annotations, "return": signature.return_annotation}
    guarded.__hoprag_io__ = io  # type: ignore[attr-defined]
    return guarded


def command_paths(app: typer.Typer, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(command path, CommandInfo)`` for every command of ``app`` and of its sub-apps."""
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")  # type: ignore[union-attr]
        yield (prefix + name).strip(), info
    for group in app.registered_groups:
        name = group.name or ""
        yield from command_paths(group.typer_instance, prefix=f"{prefix}{name} ")  # type: ignore[arg-type]


def renamed_to(path: str, info: Any) -> str | None:
    """The new spelling of a command kept under its old name for one release (``None`` for the others)."""
    return getattr(info.callback, "__hoprag_renamed_to__", None) if info.callback is not None else None


def install(app: typer.Typer) -> None:
    """Wrap every command of ``app`` listed in :data:`COMMAND_IO` in the output guard (once)."""
    for path, info in command_paths(app):
        io = COMMAND_IO.get(renamed_to(path, info) or path)
        if io is None or info.callback is None or hasattr(info.callback, "__hoprag_io__"):
            continue
        info.callback = _guarded(info.callback, io)
        if io.example:
            info.epilog = f"Example: {io.example}"
