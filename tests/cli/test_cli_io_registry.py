"""The output guard holds for every command, because tests are generated from one table.

``hoprag.cli_io.COMMAND_IO`` says what each command reads and writes. This file fails when a command
is missing from it or names a path it does not declare, and then generates, for every command that
writes: its output pointed at each of its inputs (by path and by hard link), at a file of another kind
(refused without ``--force``), and every input given as a FIFO; for every command: NaN and huge numbers
and empty text in its options. A new command without the guard fails here.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import shutil
import shlex
import typing
from pathlib import Path

import pytest
import typer

from hoprag.cli import app, main
from hoprag.cli_io import COMMAND_IO, DirOut, FileOut, command_paths, renamed_to
from tests.cli_run import run_cli as hoprag

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[2] / "data"

# A valid command line per command that writes: the example its --help ends with (hoprag.cli_io), run in the
# workspace below. The output under test replaces the value after its flag.
EXAMPLES: dict[str, list[str]] = {
    path: shlex.split(io.example)[1:] for path, io in COMMAND_IO.items() if io.outputs
}



def run_cli(argv: list[str], capsys, timeout: int = 60) -> tuple[int, str]:
    return hoprag(argv, capsys, timeout=timeout)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A real workspace: the enterprise slice, an index, traces, a pool and judgments, made by the CLI."""
    root = tmp_path_factory.mktemp("io-registry")
    for name in ("cases.jsonl", "train.jsonl", "test.jsonl"):
        shutil.copy(DATA / "enterprise" / "cases.jsonl", root / name)
    shutil.copy(DATA / "enterprise" / "corpus.jsonl", root / "corpus.jsonl")
    shutil.copy(Path(__file__).parents[1] / "data" / "hotpotqa_dev_slice.json", root / "hotpot_dev_distractor.json")
    shutil.copy(Path(__file__).parents[1] / "data" / "otel_spans.jsonl", root / "spans.jsonl")
    (root / "release.yaml").write_text("rules:\n  - metric: chain_coverage@5\n    min: 0.0\n", encoding="utf-8")
    (root / "data").mkdir()
    mp = pytest.MonkeyPatch()
    mp.chdir(root)
    mp.setenv("HOPRAG_STORE", str(root / "store.db"))
    try:
        for argv in (
            ["index", "corpus.jsonl", "--out", "index", "--quiet"],
            ["run", "index", "cases.jsonl", "--out", "traces.jsonl", "--quiet"],
            ["cases", "pool", "index", "cases.jsonl", "--out", "pool"],
        ):
            try:
                main(argv)
            except SystemExit as exc:
                assert not exc.code, f"{argv} failed with {exc.code}"
    finally:
        mp.undo()
    shutil.copy(root / "traces.jsonl", root / "traces-single.jsonl")
    first = (root / "pool" / "annotation.jsonl").read_text(encoding="utf-8").splitlines()[0]
    import json

    pair = json.loads(first)
    (root / "judgments.jsonl").write_text(json.dumps({"case_id": pair["case_id"], "doc_id": pair["doc_id"],
                                                      "grade": 1, "labeller": "a", "time": "2026-01-01"}) + "\n")
    return root


def _digest(path: Path) -> str:
    if path.is_dir():
        return "dir:" + ",".join(sorted(p.name for p in path.iterdir()))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _param_names(callback) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(callback, eval_str=True).parameters)


def _is_pathlike(param: inspect.Parameter) -> bool:
    text = str(param.annotation)
    return "Path" in text or param.name.endswith(("_dir", "_file", "_url")) or param.name in ("store", "base_url")


# ---------------------------------------------------------------- the table covers the CLI

def test_every_command_is_in_the_io_table_and_nothing_else():
    commands = {renamed_to(path, info) or path for path, info in command_paths(app)}
    assert commands - set(COMMAND_IO) == set(), "add these commands to hoprag.cli_io.COMMAND_IO"
    assert set(COMMAND_IO) - commands == set(), "COMMAND_IO names commands that do not exist"


@pytest.mark.parametrize("path", sorted(COMMAND_IO))
def test_every_path_parameter_is_declared(path):
    info = dict(command_paths(app))[path]
    io = COMMAND_IO[path]
    declared = set(io.inputs) | {o.param for o in io.outputs} | set(io.not_paths)
    params = _param_names(info.callback)
    undeclared = {name for name, p in params.items() if _is_pathlike(p)} - declared
    assert not undeclared, f"{path}: declare {sorted(undeclared)} in COMMAND_IO (inputs, outputs or not_paths)"
    assert declared <= set(params), f"{path}: COMMAND_IO names parameters the command lacks"


@pytest.mark.parametrize("path", sorted(p for p, io in COMMAND_IO.items() if io.outputs))
def test_every_writing_command_has_force(path):
    info = dict(command_paths(app))[path]
    assert "force" in _param_names(info.callback), f"{path} writes but has no --force"


@pytest.mark.parametrize("path", sorted(COMMAND_IO))
def test_every_help_ends_with_a_working_example(path, capsys):
    example = COMMAND_IO[path].example
    assert example.startswith(f"hoprag {path} "), f"give {path} an example in COMMAND_IO"
    code, output = run_cli([*path.split(), "--help"], capsys)
    assert code == 0
    assert " ".join(output.split()).endswith(f"Example: {example}"), output[-300:]


def test_the_cli_fits_on_one_screen():
    visible = [i for i in app.registered_commands if not i.hidden] + [g for g in app.registered_groups if not g.hidden]
    assert len(visible) <= 18, sorted(i.name for i in visible)


RENAMED = sorted((path, renamed_to(path, info)) for path, info in command_paths(app) if renamed_to(path, info))


@pytest.mark.parametrize(("old", "new"), RENAMED)
def test_an_old_name_still_works_and_says_the_new_one(old, new, capsys):
    assert new in COMMAND_IO
    code, output = run_cli([*old.split(), "--help"], capsys)
    assert code == 0 and "Usage:" in output
    code, output = run_cli([*old.split(), "no-such-file.jsonl", "x", "y"], capsys)
    assert f"is now `hoprag {new}`" in " ".join(output.split()) or code == 2


def test_gate_with_its_old_shape_runs_gate_check(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOPRAG_STORE", str(tmp_path / "store.db"))
    code, output = run_cli(["gate", "--run", "no-such-run"], capsys)
    assert code == 2 and "gate check" in " ".join(output.split()) and "no-such-run" in output


# ---------------------------------------------------------------- generated: outputs onto inputs

def _flag_index(argv: list[str], flag: str) -> int:
    return argv.index(flag) + 1


def _output_flags(path: str) -> list[tuple[str, FileOut | DirOut]]:
    info = dict(command_paths(app))[path]
    params = _param_names(info.callback)
    flags = []
    for output in COMMAND_IO[path].outputs:
        decls = getattr(params[output.param].default, "param_decls", ()) or ()
        flags.append((next(d for d in decls if d.startswith("--")), output))
    return flags


def _input_values(path: str, argv: list[str]) -> list[str]:
    """The files and folders the example command line reads (its inputs' values)."""
    values = []
    for token in argv[len(path.split()):]:  # after the command's own words
        if not token.startswith("-") and (Path.cwd() / token).exists():
            values.append(token)
    outputs = {argv[_flag_index(argv, flag)] for flag, _ in _output_flags(path)}
    return [v for v in values if v not in outputs]


GENERATED = [(path, flag, i) for path in sorted(EXAMPLES) for flag, _ in _output_flags(path) for i in range(4)]


@pytest.mark.parametrize(("path", "flag", "which"), GENERATED)
def test_an_output_onto_an_input_is_refused_and_the_input_kept(path, flag, which, work, capsys, monkeypatch):
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOPRAG_STORE", str(work / "store.db"))
    argv = list(EXAMPLES[path])
    inputs = _input_values(path, argv)
    if which >= len(inputs):
        pytest.skip(f"{path} reads {len(inputs)} inputs")
    if COMMAND_IO[path].in_place and inputs[which] == argv[len(path.split())]:
        pytest.skip(f"{path} rewrites {inputs[which]} in place on purpose (test_redact_in_place_is_declared)")
    target = inputs[which]
    before = _digest(work / target)
    argv[_flag_index(argv, flag)] = target
    code, output = run_cli(argv, capsys)
    assert code == 2, (argv, output)
    assert "replace" in output and "Fix:" in output and "Traceback" not in output, output
    assert _digest(work / target) == before


@pytest.mark.parametrize(("path", "flag"), [(p, f) for p in sorted(EXAMPLES) for f, o in _output_flags(p)
                                             if isinstance(o, FileOut)])
def test_an_output_hard_linked_to_an_input_is_refused(path, flag, work, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOPRAG_STORE", str(work / "store.db"))
    argv = list(EXAMPLES[path])
    inputs = [i for i in _input_values(path, argv) if (work / i).is_file()]
    if COMMAND_IO[path].in_place:
        inputs = inputs[1:]
    if not inputs:
        pytest.skip(f"{path} reads no file it may not rewrite")
    link = tmp_path / "link-to-input"
    os.link(work / inputs[0], link)
    before = _digest(work / inputs[0])
    argv[_flag_index(argv, flag)] = str(link)
    code, output = run_cli(argv, capsys)
    assert code == 2 and "same file" in output, (argv, output)
    assert _digest(work / inputs[0]) == before


@pytest.mark.parametrize(("path", "flag"), [(p, f) for p in sorted(EXAMPLES) for f, o in _output_flags(p)
                                             if isinstance(o, FileOut) and o.kind is not None])
def test_a_file_of_another_kind_is_kept_unless_forced(path, flag, work, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOPRAG_STORE", str(work / "store.db"))
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes, not written by hoprag\n" * 3, encoding="utf-8")
    argv = list(EXAMPLES[path])
    argv[_flag_index(argv, flag)] = str(notes)
    code, output = run_cli(argv, capsys)
    assert code == 2 and "--force" in output and "Traceback" not in output, (argv, output)
    assert notes.read_text(encoding="utf-8").startswith("my notes")


@pytest.mark.parametrize(("path", "flag"), [(p, f) for p in sorted(EXAMPLES) for f, o in _output_flags(p)
                                             if isinstance(o, DirOut)])
def test_a_directory_output_that_is_a_file_is_refused(path, flag, work, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOPRAG_STORE", str(work / "store.db"))
    a_file = tmp_path / "a-file"
    a_file.write_text("keep me\n", encoding="utf-8")
    argv = list(EXAMPLES[path])
    argv[_flag_index(argv, flag)] = str(a_file)
    code, output = run_cli(argv, capsys)
    assert code == 2 and "Traceback" not in output, (argv, output)
    assert a_file.read_text(encoding="utf-8") == "keep me\n"


# ---------------------------------------------------------------- generated: special inputs and values

def _input_params(path: str) -> list[tuple[str, inspect.Parameter]]:
    info = dict(command_paths(app))[path]
    params = _param_names(info.callback)
    return [(name, params[name]) for name in COMMAND_IO[path].inputs]


@pytest.mark.parametrize("path", sorted(EXAMPLES))
def test_a_fifo_as_any_input_is_refused_without_blocking(path, work, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOPRAG_STORE", str(work / "store.db"))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    argv = list(EXAMPLES[path])
    files = [i for i in _input_values(path, argv) if (work / i).is_file()]
    if not files:
        pytest.skip(f"{path} reads no file")
    for name in files:
        bad = [str(fifo) if token == name else token for token in argv]
        code, output = run_cli(bad, capsys)
        assert code == 2 and "FIFO" in output and "Fix:" in output, (bad, output)


def _options(path: str) -> list[tuple[str, inspect.Parameter, type]]:
    """(flag, parameter, base type) of every option of the command."""
    info = dict(command_paths(app))[path]
    out = []
    for name, param in _param_names(info.callback).items():
        if not isinstance(param.default, typer.models.OptionInfo):
            continue
        base = param.annotation
        args = [a for a in typing.get_args(base) if a is not type(None)]
        if typing.get_origin(base) in (typing.Union, list) or str(typing.get_origin(base)) == "types.UnionType":
            base = args[0] if args else base
        decls = [d for d in (param.default.param_decls or ()) if d.startswith("--")]
        if decls:
            out.append((decls[0].split("/")[0], param, base))
    return out


VALUE_CASES = [(path, flag, kind) for path in sorted(EXAMPLES) for flag, _, kind in _options(path)
               if kind in (float, int, str)]


@pytest.mark.parametrize(("path", "flag", "kind"), VALUE_CASES)
def test_non_finite_huge_and_empty_option_values_are_refused(path, flag, kind, work, capsys, monkeypatch):
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOPRAG_STORE", str(work / "store.db"))
    bad = {float: ["nan", "inf", "-inf", "1e400"], int: [str(10**30)], str: ["", "   "]}[kind]
    for value in bad:
        argv = list(EXAMPLES[path]) + [flag, value]
        code, output = run_cli(argv, capsys)
        assert code == 2, (argv, output)
        assert "Traceback" not in output and "failed unexpectedly" not in output, (argv, output)


def test_redact_in_place_is_declared_and_atomic(work, capsys, monkeypatch, tmp_path):
    """`redact T --out T` is documented: T is rewritten whole (its copy beside it replaces it)."""
    monkeypatch.chdir(work)
    copy = tmp_path / "traces.jsonl"
    shutil.copy(work / "traces.jsonl", copy)
    code, output = run_cli(["redact", str(copy), "--out", str(copy)], capsys)
    assert code == 0, output
    assert copy.read_text(encoding="utf-8").count("\n") == (work / "traces.jsonl").read_text(encoding="utf-8").count("\n")
    assert [p.name for p in tmp_path.iterdir()] == ["traces.jsonl"]  # no temporary file left behind


def test_printing_is_format_json_and_json_names_a_file(work, capsys, monkeypatch):
    """--json writes a file wherever it appears; commands that print take --format; the old printing
    --json still prints, saying the new spelling."""
    import json

    monkeypatch.chdir(work)
    code, output = run_cli(["search", "index", "travel approval", "--format", "json"], capsys)
    assert code == 0 and isinstance(json.loads(output), list)
    code, output = run_cli(["search", "index", "travel approval", "--json"], capsys)
    assert code == 0 and "now `--format json`" in " ".join(output.split())
    code, output = run_cli(["search", "index", "travel approval", "--format", "yaml"], capsys)
    assert code == 2 and "--format" in output and "Fix:" in output


def test_a_run_id_is_run_id_everywhere(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOPRAG_STORE", str(tmp_path / "store.db"))
    for argv in (["gate", "check", "--run-id", "no-such-run"], ["gate", "baseline", "--run-id", "no-such-run"]):
        code, output = run_cli(argv, capsys)
        assert code == 2 and "no-such-run" in output, (argv, output)
    code, output = run_cli(["gate", "check", "--run", "no-such-run"], capsys)
    assert code == 2 and "now `--run-id`" in " ".join(output.split())
    code, output = run_cli(["gate", "check"], capsys)
    assert code == 2 and "--run-id" in output
