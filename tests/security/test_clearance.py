"""The one clearance resolver (:mod:`hoprag.security.clearance`): flag, then environment, then default,
failing closed, and every entry point with a clearance going through it.

Refusals run through the command line's real error boundary (``hoprag.cli.main``: exit code and the
printed message), over an index of the bundled enterprise corpus, whose documents are 9 public,
18 internal and 9 restricted (36 in all).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

from hoprag.security.acl import Clearance, parse_levels
from hoprag.cli import app, main
from hoprag.errors import ConfigError
from hoprag.index.store import build_index
from hoprag.ingest.loaders import load_corpora
from hoprag.security import clearance as resolver

pytestmark = pytest.mark.integration

ENTERPRISE = Path(__file__).resolve().parents[2] / "data" / "enterprise"
CASES = ENTERPRISE / "cases.jsonl"
QUERY = "Project Orion order form plan retention"


@pytest.fixture(scope="module")
def documents():
    return load_corpora([ENTERPRISE / "corpus.jsonl"])


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, documents) -> Path:
    out = tmp_path_factory.mktemp("security-acl") / "index"
    build_index(documents, out)
    return out


@pytest.fixture(autouse=True)
def _no_clearance_in_the_environment(monkeypatch) -> None:
    monkeypatch.delenv(resolver.CLEARANCE_ENV, raising=False)
    monkeypatch.delenv(resolver.LEVELS_ENV, raising=False)


def hoprag(capsys, *args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr (whitespace folded) of the command line, through its error boundary."""
    try:
        main(list(args))
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


def refused(capsys, *args: str) -> str:
    code, _, said = hoprag(capsys, *args)
    assert code == 2, said
    assert said.startswith("error:") and "Fix:" in said and "Traceback" not in said
    return said


# --- the resolver itself -------------------------------------------------------------------------


@pytest.mark.unit
def test_flag_then_environment_then_default() -> None:
    env = {"HOPRAG_CLEARANCE": "internal"}
    assert resolver.caller_clearance("public", environ=env).level == "public"
    assert resolver.caller_clearance(None, environ=env).level == "internal"
    assert resolver.caller_clearance(None, environ={}) is None  # unset everywhere: the operator
    assert resolver.caller_clearance(None, environ={}, unset="lowest").level == "public"  # the service's callers
    custom = resolver.caller_clearance(None, environ={"HOPRAG_CLEARANCE": "staff", "HOPRAG_ACL_LEVELS": "open,staff"})
    assert custom == parse_levels("open,staff").clearance("staff")
    assert resolver.caller_clearance(None, "open,staff", environ={}, unset="lowest").level == "open"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("flag", "levels", "env", "said"),
    [
        ("", None, {}, "--clearance '' is empty"),
        ("  ", None, {}, "--clearance '  ' is empty"),
        (None, None, {"HOPRAG_CLEARANCE": ""}, "the environment variable HOPRAG_CLEARANCE is set but empty"),
        (None, None, {"HOPRAG_CLEARANCE": "secret"}, "unknown clearance 'secret' from the environment variable HOPRAG_CLEARANCE"),
        ("secret", None, {"HOPRAG_CLEARANCE": "public"}, "unknown clearance 'secret' from --clearance"),
        ("public", None, {"HOPRAG_ACL_LEVELS": ""}, "the environment variable HOPRAG_ACL_LEVELS is '', which names no"),
        ("public", " , ", {}, "--acl-levels is ' , ', which names no clearance level"),
        ("public", "public,Public", {}, "names public more than once"),
    ],
)
def test_empty_and_unknown_values_are_refused_naming_where_they_came_from(flag, levels, env, said) -> None:
    with pytest.raises(ConfigError) as refused_:
        resolver.caller_clearance(flag, levels, environ=env)
    message = str(refused_.value)
    assert said in message and "Fix:" in message


@pytest.mark.unit
def test_values_handed_to_retrievers_are_checked_by_the_same_module() -> None:
    assert resolver.resolve_clearance("Internal") == Clearance("internal")
    with pytest.raises(ConfigError, match="empty"):
        resolver.resolve_clearance("")
    from hoprag.security import acl

    assert not hasattr(acl, "resolve_clearance")  # one resolver: the policy module holds no second copy


# --- the command line ------------------------------------------------------------------------------


def test_search_refuses_an_empty_clearance_flag(capsys, index_dir) -> None:
    said = refused(capsys, "search", str(index_dir), QUERY, "--clearance", "")
    assert "--clearance" in said and "is empty" in said  # the command line's check of empty flags may say it first


@pytest.mark.parametrize("command", ["search", "run"])
def test_an_empty_environment_variable_is_refused_not_read_as_unrestricted(capsys, monkeypatch, index_dir, tmp_path, command) -> None:
    monkeypatch.setenv("HOPRAG_CLEARANCE", "")
    out = tmp_path / "traces.jsonl"
    args = [str(index_dir), QUERY] if command == "search" else [str(index_dir), str(CASES), "--out", str(out), "--quiet"]
    said = refused(capsys, command, *args)
    assert "HOPRAG_CLEARANCE is set but empty" in said and "unset HOPRAG_CLEARANCE" in said
    assert not out.exists()


def test_an_unknown_level_from_the_environment_names_the_variable(capsys, monkeypatch, index_dir) -> None:
    monkeypatch.setenv("HOPRAG_CLEARANCE", "Secret")
    said = refused(capsys, "search", str(index_dir), QUERY)
    assert "unknown clearance 'Secret' from the environment variable HOPRAG_CLEARANCE" in said
    assert "public, internal, confidential, restricted" in said


@pytest.mark.parametrize("clearance", [("--clearance", "public"), ()], ids=["public", "no-clearance"])
@pytest.mark.parametrize("command", ["search", "run"])
def test_levels_from_the_environment_that_miss_a_class_of_the_index_are_refused(
    capsys, monkeypatch, index_dir, tmp_path, command, clearance
) -> None:
    monkeypatch.setenv("HOPRAG_ACL_LEVELS", "public")
    out = tmp_path / "traces.jsonl"
    args = [str(index_dir), QUERY] if command == "search" else [str(index_dir), str(CASES), "--out", str(out), "--quiet"]
    said = refused(capsys, command, *args, *clearance)
    assert "the levels 'public' from the environment variable HOPRAG_ACL_LEVELS" in said
    assert "do not list the acl classes internal, restricted" in said
    assert "acl_classes: internal, public, restricted" in said
    assert "HOPRAG_ACL_LEVELS=public,internal,restricted" in said and "unset HOPRAG_ACL_LEVELS" in said
    assert not out.exists()


def test_levels_from_the_flag_that_miss_a_class_name_the_flag(capsys, index_dir) -> None:
    said = refused(capsys, "search", str(index_dir), QUERY, "--acl-levels", "public,internal", "--clearance", "internal")
    assert "the levels 'public,internal' from --acl-levels do not list the acl class restricted" in said
    assert "--acl-levels public,internal,restricted" in said


def test_levels_naming_every_class_are_used(capsys, monkeypatch, index_dir, documents) -> None:
    monkeypatch.setenv("HOPRAG_ACL_LEVELS", "Public, internal ,restricted")
    monkeypatch.setenv("HOPRAG_CLEARANCE", "public")
    code, printed, said = hoprag(capsys, "search", str(index_dir), QUERY, "-k", "5", "--json")
    assert code == 0, said
    public = {d.id for d in documents if d.acl == "public"}
    hits = json.loads(printed)
    assert len(hits) == 5 and {h["doc_id"] for h in hits} <= public


# --- hoprag serve's startup ------------------------------------------------------------------------


@pytest.fixture
def serve_args(monkeypatch, tmp_path, index_dir):
    """``hoprag serve`` over the enterprise index, stopped where uvicorn would start serving."""
    pytest.importorskip("fastapi")
    uvicorn = pytest.importorskip("uvicorn")
    started = []

    def run(application, **_: object) -> None:
        started.append(application.state.hoprag.config.clearance)
        application.state.hoprag.store.close()
        application.state.hoprag.executor.shutdown(wait=False)

    monkeypatch.setattr(uvicorn, "run", run)
    monkeypatch.chdir(tmp_path)  # no thresholds.yaml or run store of the repository
    return ["serve", str(index_dir), "--store", str(tmp_path / "store.db")], started


@pytest.mark.parametrize(
    ("env", "flags", "said"),
    [
        ({"HOPRAG_CLEARANCE": ""}, (), "HOPRAG_CLEARANCE is set but empty"),
        ({}, ("--clearance", ""), "--clearance"),
        ({"HOPRAG_CLEARANCE": "top"}, (), "unknown clearance 'top' from the environment variable HOPRAG_CLEARANCE"),
        ({"HOPRAG_ACL_LEVELS": "public"}, (), "do not list the acl classes internal, restricted"),
        ({}, ("--acl-levels", "public,restricted"), "the levels 'public,restricted' from --acl-levels do not list"),
    ],
)
def test_serve_refuses_at_startup(capsys, monkeypatch, serve_args, env, flags, said) -> None:
    args, started = serve_args
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert said in refused(capsys, *args, *flags)
    assert started == []


def test_serve_reads_the_environment_and_keeps_public_as_the_default(capsys, monkeypatch, serve_args) -> None:
    args, started = serve_args
    code, _, said = hoprag(capsys, *args)
    assert code == 0 and "27 of 36 documents are above the 'public' clearance" in said  # internal 18 + restricted 9
    monkeypatch.setenv("HOPRAG_CLEARANCE", "internal")
    code, _, said = hoprag(capsys, *args)
    assert code == 0 and "9 of 36 documents are above the 'internal' clearance" in said  # restricted 9
    code, _, said = hoprag(capsys, *args, "--clearance", "restricted")  # the flag before the environment
    assert code == 0 and "above the" not in said
    assert started == ["public", "internal", "restricted"]


def test_the_service_with_tokens_has_no_caller_without_one(tmp_path, index_dir) -> None:
    pytest.importorskip("fastapi")
    from hoprag.service.access import caller_of
    from hoprag.service.app import ServiceConfig, ServiceError, create_app

    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("tokens:\n  - {token: abcdefghijklmnop, name: ines, clearance: internal}\n", encoding="utf-8")
    config = ServiceConfig(index_dir=index_dir, store=str(tmp_path / "store.db"), tokens=tokens,
                           acl_levels="guest,public,internal,restricted")
    state = create_app(config).state.hoprag
    try:
        with pytest.raises(ServiceError, match="needs a bearer token"):
            caller_of(state, None)
        assert caller_of(state, "Bearer abcdefghijklmnop").clearance == "internal"
    finally:
        state.store.close()
        state.executor.shutdown(wait=False)


# --- the library -----------------------------------------------------------------------------------


def test_make_engine_resolves_like_the_commands(monkeypatch, index_dir) -> None:
    from hoprag.index.store import load_index
    from hoprag.pipeline.factory import make_engine

    index = load_index(index_dir)
    assert make_engine("single", index).clearance is None
    monkeypatch.setenv("HOPRAG_CLEARANCE", "internal")
    assert make_engine("single", index).clearance == Clearance("internal")
    assert make_engine("single", index, clearance="public").clearance == Clearance("public")
    monkeypatch.setenv("HOPRAG_CLEARANCE", "")
    with pytest.raises(ConfigError, match="HOPRAG_CLEARANCE is set but empty"):
        make_engine("single", index)
    monkeypatch.delenv("HOPRAG_CLEARANCE")
    with pytest.raises(ConfigError, match="clearance= '' is empty"):
        make_engine("multihop", index, clearance="")
    with pytest.raises(ConfigError, match="do not list the acl class restricted"):
        make_engine("multihop", index, clearance=parse_levels("public,internal").clearance("public"))


# --- every entry point goes through the one resolver ------------------------------------------------


class ReachedTheResolver(Exception):
    """Raised by the stand-in resolver: the command asked it for the clearance."""


#: the least each command with --clearance needs to reach its clearance (a new command needs a row)
MINIMAL_ARGS = {
    "search": lambda idx, tmp: [idx, QUERY],
    "ask": lambda idx, tmp: [idx, "Who approved Project Orion?"],
    "run": lambda idx, tmp: [idx, str(CASES), "--out", str(tmp / "traces.jsonl"), "--quiet"],
    "ablate": lambda idx, tmp: [idx, str(CASES), "--out", str(tmp / "ablate")],
    "cases pool": lambda idx, tmp: [idx, str(CASES), "--out", str(tmp / "pool")],
    "serve": lambda idx, tmp: [idx, "--store", str(tmp / "store.db")],
}


def _commands_with(option: str) -> dict[str, click.Command]:
    root = typer.main.get_command(app)
    found: dict[str, click.Command] = {}
    stack = [("", root)]
    while stack:
        prefix, group = stack.pop()
        for name, command in getattr(group, "commands", {}).items():
            if command.hidden:  # a renamed command's old spelling: the same command
                continue
            path = f"{prefix} {name}".strip()
            if getattr(command, "commands", None):
                stack.append((path, command))
            elif any(option in param.opts for param in command.params):
                found[path] = command
    return found


def test_every_command_with_a_clearance_resolves_it_through_the_one_resolver(monkeypatch, index_dir, tmp_path) -> None:
    commands = _commands_with("--clearance")
    assert set(commands) == set(MINIMAL_ARGS), "a command with --clearance needs a row in MINIMAL_ARGS"
    for name, command in commands.items():
        for param in command.params:  # typer's envvar= would read HOPRAG_CLEARANCE="" as unset
            if {"--clearance", "--acl-levels"} & set(param.opts):
                assert not param.envvar, f"{name} {param.opts[0]} reads the environment itself"

    def stand_in(*args: object, **kwargs: object) -> None:
        raise ReachedTheResolver

    monkeypatch.setattr(resolver, "caller_clearance", stand_in)
    monkeypatch.chdir(tmp_path)
    for name in sorted(commands):
        args = MINIMAL_ARGS[name](str(index_dir), tmp_path / name)
        result = CliRunner().invoke(app, [*name.split(), *args])
        assert isinstance(result.exception, ReachedTheResolver), (name, result.output, result.exception)


def test_library_entry_points_resolve_through_the_one_resolver(monkeypatch, index_dir) -> None:
    from hoprag.evaluation.ablations import ablation_engines
    from hoprag.index.store import load_index
    from hoprag.pipeline.factory import make_engine

    index = load_index(index_dir)

    def stand_in(*args: object, **kwargs: object) -> None:
        raise ReachedTheResolver

    monkeypatch.setattr(resolver, "caller_clearance", stand_in)
    for build in (lambda: make_engine("multihop", index), lambda: make_engine("single", index, clearance="public"),
                  lambda: ablation_engines(index)):
        with pytest.raises(ReachedTheResolver):
            build()
