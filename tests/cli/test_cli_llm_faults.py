"""``hoprag ask`` / ``run`` against model servers that fail: silent, dead, too small a context, strict mode;
the model flags are validated, and every flag an error message names exists on the CLI."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest
import typer.main

from hoprag.cli import app, main
from hoprag.datasets.schema import load_cases

sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))
from llm_stub import SilentServer, StubReply, StubServer, chat_body, free_port  # noqa: E402

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"
QUESTION = "Under the current retention policy, how long is customer data kept for the plan acquired under Project Orion?"


def call_main(argv: list[str]) -> None:
    """``hoprag ARGV`` in this process, through the console entry point and its error boundary."""
    saved, sys.argv = sys.argv, ["hoprag", *argv]
    try:
        main()
    finally:
        sys.argv = saved


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        call_main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def trace_of(stdout: str) -> dict:
    return json.loads(stdout[stdout.index("{"): stdout.rindex("}") + 1])


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("HOPRAG_API_KEY", "OPENAI_API_KEY", "HOPRAG_BASE_URL", "HOPRAG_LLM", "HOPRAG_CLEARANCE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("llm-faults") / "index"
    try:
        call_main(["index", str(ENTERPRISE / "corpus.jsonl"), "--out", str(out), "--quiet"])
    except SystemExit as exc:
        assert not exc.code
    return out


@pytest.fixture(scope="module")
def three_cases(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("llm-faults-cases") / "cases.jsonl"
    lines = (ENTERPRISE / "cases.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(load_cases(path)) == 3
    return path


def test_a_silent_server_costs_one_call_within_the_budget_and_the_answer_comes_offline(index_dir, capsys):
    with SilentServer() as server:
        code, stdout, stderr = run_cli(["ask", str(index_dir), QUESTION, "--llm", "openai:hung", "--base-url", server.url,
                                        "--llm-budget", "0.5", "--json"], capsys)
        assert server.connections == 1  # the planner's call; every later role saw the budget spent
    assert code == 0, stderr
    trace = trace_of(stdout)
    assert trace["fallbacks"]["planner"] == 1 and trace["fallbacks"]["synthesizer"] == 1
    assert any("LLMTimeoutError" in w for w in trace["warnings"])
    assert any("model budget of 0.5 s is spent" in w for w in trace["warnings"])
    assert trace["answer"]["text"] and "Traceback" not in stderr


def test_a_dead_port_opens_the_circuit_and_ask_prints_the_fallbacks(index_dir, capsys):
    url = f"http://127.0.0.1:{free_port()}/v1"
    code, stdout, stderr = run_cli(["ask", str(index_dir), QUESTION, "--llm", "openai:gone", "--base-url", url], capsys)
    assert code == 0, stderr
    flat = " ".join(stdout.split())
    assert re.search(r"\d+ model fallbacks \(.*planner 1", flat)
    assert "circuit open for openai:gone after 3 consecutive failed calls" in flat
    assert "Connection refused" in flat or "cannot reach" in flat


def test_run_counts_fallbacks_per_role_so_zero_errors_hides_nothing(index_dir, three_cases, tmp_path, capsys):
    with SilentServer() as server:
        code, stdout, stderr = run_cli(["run", str(index_dir), str(three_cases), "--out", str(tmp_path / "t.jsonl"),
                                        "--llm", "openai:hung", "--base-url", server.url, "--llm-budget", "0.3",
                                        "--quiet"], capsys)
        assert server.connections == 3  # one timed-out call per question; then the circuit is open
    assert code == 0, stderr
    flat = " ".join(stdout.split())
    assert "0 errors" in flat and re.search(r"\d+ model fallbacks in 3 traces \(.*planner 3", flat), flat
    assert "circuit open for openai:hung after 3 consecutive failed calls" in " ".join(stderr.split())
    traces = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines() if '"case_id"' in line]
    assert len(traces) == 3 and all(t["fallbacks"].get("planner") == 1 for t in traces)


def prompt_size(body: dict) -> int:
    """Tokens of a request's messages for the stub model: 3 characters a token."""
    return sum(len(m["content"]) for m in body["messages"]) // 3


def small_context_model(request: dict) -> StubReply:
    """A model with a 2048-token context: too long a prompt gets the OpenAI 400."""
    body = request["json"]
    needed = prompt_size(body)
    if needed + body["max_tokens"] > 2048:
        message = (f"This model's maximum context length is 2048 tokens. However, you requested "
                   f"{needed + body['max_tokens']} tokens ({needed} in the messages, {body['max_tokens']} in the "
                   "completion). Please reduce the length of the messages or completion.")
        return StubReply(400, {"error": {"message": message, "code": "context_length_exceeded"}})
    title = (body.get("response_format") or {}).get("json_schema", {}).get("name", "")
    replies = {
        "_PlanReply": {"sub_queries": [{"order": 1, "query": "Project Orion plan retention policy"}]},
        "_JudgeReply": {"sufficient": False},
        "_ExpandReply": {"queries": [{"query": "retention policy Tern Pro", "bridge": "Tern Pro"}]},
        "_AnswerReply": {"answer": "7 years", "claims": [{"text": "Kept 7 years.", "citations": ["E1"]}]},
    }
    return StubReply(body=chat_body(json.dumps(replies.get(title, {}))))


def test_a_context_length_400_fits_the_prompt_instead_of_retrying_it(index_dir, capsys):
    with StubServer(responder=small_context_model) as server:
        code, stdout, stderr = run_cli(["ask", str(index_dir), QUESTION, "--llm", "openai:small", "--base-url",
                                        server.url, "--json"], capsys)
        refused = [r for r in server.requests if prompt_size(r["json"]) + r["json"]["max_tokens"] > 2048]
    assert code == 0, stderr
    trace = trace_of(stdout)
    assert trace["answer"]["text"] == "7 years" and "synthesizer" not in trace["fallbacks"]
    assert any("prompt fitted to the model's 2048-token context: left out the" in w for w in trace["warnings"])
    # the first refusal taught the backend the window: every later prompt was fitted before it was sent
    assert len(refused) == 1


def test_strict_llm_makes_a_fallback_an_error(index_dir, three_cases, tmp_path, capsys):
    url = f"http://127.0.0.1:{free_port()}/v1"
    code, stdout, stderr = run_cli(["ask", str(index_dir), QUESTION, "--llm", "openai:gone", "--base-url", url,
                                    "--strict-llm"], capsys)
    assert code == 2 and "strict mode forbids the offline fallback" in " ".join(stderr.split())
    assert "Traceback" not in stderr + stdout
    code, stdout, stderr = run_cli(["run", str(index_dir), str(three_cases), "--out", str(tmp_path / "s.jsonl"),
                                    "--llm", "openai:gone", "--base-url", url, "--strict-llm", "--quiet"], capsys)
    # exit 3, as for any run that leaves error traces; resuming answers them again
    assert code == 3 and "3 of 3 questions failed under --strict-llm" in " ".join(stderr.split())
    assert "run the same command again" in " ".join(stderr.split())


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--engine", "single", "--llm", "openai:x"], "--engine single answers without any model"),
        (["--engine", "single", "--planner-llm", "openai:x"], "--planner-llm openai:x would be ignored"),
        (["--n-ctx", "512", "--llm", "openai:x", "--base-url", "http://127.0.0.1:9/v1"], "--n-ctx sets the context"),
        (["--api-key", "sk-1"], "--api-key applies only to openai:MODEL"),
        (["--base-url", "http://127.0.0.1:9/v1"], "--base-url applies only to openai:MODEL"),
        (["--llm-timeout", "5"], "--llm-timeout would be ignored: no role uses a model"),
        (["--rerank", "llm"], "--rerank llm needs a model"),
        (["--llm-retries", "-1"], "--llm-retries"),
        (["--llm-budget", "-2"], "--llm-budget"),
        (["--llm-timeout", "0"], "--llm-timeout"),
        (["--n-ctx", "10", "--llm", "llamacpp:m.gguf"], "--n-ctx"),
    ],
)
def test_a_model_flag_that_cannot_apply_is_refused_with_its_name(index_dir, capsys, extra, message):
    code, stdout, stderr = run_cli(["ask", str(index_dir), QUESTION, *extra], capsys)
    assert code == 2, stdout
    assert message in " ".join(stderr.split()) and "Traceback" not in stderr


def test_an_environment_model_is_not_forced_on_the_single_engine(index_dir, capsys, monkeypatch):
    monkeypatch.setenv("HOPRAG_LLM", "openai:from-env")
    code, stdout, stderr = run_cli(["ask", str(index_dir), QUESTION, "--engine", "single"], capsys)
    assert code == 0 and "HOPRAG_LLM=openai:from-env is not used" in " ".join(stderr.split())


def test_ablate_takes_the_same_model_flags(index_dir, three_cases, tmp_path, capsys):
    code, _, stderr = run_cli(["ablate", str(index_dir), str(three_cases), "--out", str(tmp_path / "ab"),
                               "--api-key", "k"], capsys)
    assert code == 2 and "--api-key applies only to openai:MODEL" in " ".join(stderr.split())


def test_the_cli_defaults_are_the_library_defaults():
    from hoprag import cli_llm
    from hoprag.llm.base import DEFAULT_TIMEOUT
    from hoprag.llm.guard import DEFAULT_BUDGET

    assert (cli_llm.DEFAULT_TIMEOUT, cli_llm.DEFAULT_BUDGET) == (DEFAULT_TIMEOUT, DEFAULT_BUDGET)
    assert DEFAULT_BUDGET < 60


# --- every flag a message names exists ------------------------------------------------------------

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?![\w-])")  # not an arrow like A --v--> B


def cli_flags() -> set[str]:
    """Every option name of every command and subcommand of ``hoprag``."""
    flags: set[str] = set()

    def walk(command) -> None:
        for param in command.params:
            flags.update(o for o in (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ()))
                         if o.startswith("--"))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    return flags | {"--help"} | pytest_plugin_flags() | set(FOREIGN_FLAGS)


#: flags of other programs that messages quote as a command to run, never as a hoprag option
FOREIGN_FLAGS = {"--head": "`ray start --head`, Ray's own command that starts a cluster's head node"}


def pytest_plugin_flags() -> set[str]:
    """Options the pytest plugin adds to pytest's own command line (``addoption("--hoprag-…")``)."""
    tree = ast.parse((ROOT / "src" / "hoprag" / "gates" / "pytest_plugin.py").read_text(encoding="utf-8"))
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "addoption"
        and node.args and isinstance(node.args[0], ast.Constant)
    }


def flags_in_strings() -> dict[str, set[str]]:
    """``--flag`` mentions in the string literals (f-string parts included) of ``src/hoprag``, by file."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "src" / "hoprag").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for flag in FLAG.findall(node.value):
                    found.setdefault(flag, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_flag_named_in_the_source_exists_on_some_command():
    mentioned = flags_in_strings()
    assert {"--llm-timeout", "--api-key", "--llm-budget"} <= set(mentioned)  # the scan sees the messages
    defined = cli_flags()
    missing = {flag: sorted(files) for flag, files in mentioned.items() if flag not in defined}
    assert missing == {}, f"flags named in messages but defined on no command: {missing}"
