"""The model grader: strict verdict parsing, counted grader failures, and `hoprag judge calibrate --llm openai:…`
against the real llama.cpp server (protocol, not quality), a dead port and a server that never answers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest

from hoprag.datasets.schema import load_cases
from hoprag.errors import ConfigError
from hoprag.evaluation.calibration import build_examples, calibrate, make_grader
from hoprag.evaluation.model_judge import PROMPT_VERSION, GraderFailure, parse_verdict, prompt_for
from tests.cli_run import run_hoprag as run_cli

sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))
from llm_stub import SilentServer, StubReply, StubServer, chat_body, free_port  # noqa: E402

ROOT = Path(__file__).parents[2]
ENTERPRISE = ROOT / "data" / "enterprise" / "cases.jsonl"




@pytest.fixture
def tiny_cases(tmp_path: Path) -> Path:
    """Two real enterprise cases cut down so the model grades two examples: ent-003 with one fact and no
    aliases (adjudicated), and ent-001 with its adjudication removed (skipped, and counted)."""
    lines = ENTERPRISE.read_text(encoding="utf-8").splitlines()
    wren, orion = json.loads(lines[2]), json.loads(lines[0])
    keep = "policy-11:silver-critical"
    wren.update(facts={keep: wren["facts"][keep]}, required_facts=[keep], valid_chains=[[keep]], edges=[], aliases=[])
    orion["adjudication"] = []
    path = tmp_path / "tiny.jsonl"
    path.write_text(json.dumps(wren) + "\n" + json.dumps(orion) + "\n", encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("HOPRAG_API_KEY", "OPENAI_API_KEY", "HOPRAG_BASE_URL", "HOPRAG_LLM"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.unit
@pytest.mark.parametrize("reply, verdict", [
    ('{"verdict": "yes"}', True), ('{ "verdict": "no" }', False), ("Yes", True), ("no.", False),
    ("**Yes**, the evidence says so", True), ('"no"', False), ("NO", False),
])
def test_a_verdict_is_yes_or_no_as_a_first_word_or_json(reply: str, verdict: bool) -> None:
    assert parse_verdict(reply) is verdict


@pytest.mark.unit
@pytest.mark.parametrize("reply", [
    "", "The answer is yes", "yesterday", "nope", "maybe", '{"verdict": "perhaps"}', '{"verdict": true}',
    '{ "verdict": "yes"', "[1]", '\n<img src="http://i',
])
def test_anything_else_is_a_grader_failure_never_a_no(reply: str) -> None:
    with pytest.raises(GraderFailure) as failed:
        parse_verdict(reply)
    assert failed.value.reply == reply and failed.value.reason


@pytest.mark.unit
def test_each_task_has_its_own_prompt_naming_both_sides() -> None:
    texts = {task: prompt_for(task, "CLAIM-X", "EVIDENCE-Y") for task in ("claim_support", "faithfulness",
                                                                            "answer_equivalence")}
    assert len(set(texts.values())) == 3 and all("CLAIM-X" in t and "EVIDENCE-Y" in t for t in texts.values())
    assert PROMPT_VERSION.startswith("model-grader-v")


class _HalfAnswering:
    """A grader that gives no verdict on every other example (what a weak model does)."""

    model_id, prompt_version = "test:half", "t1"

    def __init__(self) -> None:
        self.calls = 0

    def identity(self) -> dict:
        return {"llm": "test", "model_id": self.model_id, "prompt_version": self.prompt_version}

    def grade(self, example, case) -> bool:
        self.calls += 1
        if self.calls % 2 == 0:
            raise GraderFailure("reply does not start with yes or no", "hmm")
        return example.label


@pytest.mark.unit
def test_grader_failures_are_counted_listed_and_left_out_of_the_agreement() -> None:
    cases = load_cases(ENTERPRISE)
    examples = build_examples(cases).examples
    record = calibrate(cases, grader=_HalfAnswering(), resamples=50)
    failures = record["grader_failures"]
    assert failures["count"] == len(examples) // 2 and len(failures["items"]) == failures["count"]
    assert record["overall"]["n"] + failures["count"] == record["examples"] == len(examples)
    assert record["overall"]["accuracy"] == 1.0 and not record["disagreements"]  # failures are not "no"
    assert failures["items"][0]["reply"] == "hmm" and failures["items"][0]["item"] == examples[1].item
    assert sum(t["grader_failures"] for t in record["tasks"].values()) == failures["count"]


@pytest.mark.unit
def test_a_local_gguf_cannot_be_calibrated_and_is_refused_before_anything_runs() -> None:
    with pytest.raises(ConfigError, match="--llm openai:MODEL"):
        make_grader("llamacpp:model.gguf")


@pytest.mark.integration
@pytest.mark.slow
def test_the_model_grader_on_the_real_llama_server_writes_a_complete_pinned_record(
        llama_server: str, tiny_cases: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "calibration.json"
    code, stdout, stderr = run_cli(["judge", "calibrate", str(tiny_cases), "--llm", "openai:gemma3-270m",
                                    "--base-url", llama_server, "--resamples", "50", "--seed", "7",
                                    "--out", str(out)], capsys)
    assert code == 0, stderr
    record = json.loads(out.read_text(encoding="utf-8"))
    served = [m["id"] for m in httpx.get(llama_server + "/models", timeout=10).json()["data"]]
    port = llama_server.split(":")[2].split("/")[0]
    assert record["judge"] == {"llm": "openai:gemma3-270m", "model_id": served[0], "prompt_version": PROMPT_VERSION,
                               "base_url_host": f"127.0.0.1:{port}", "temperature": 0.0, "seed": 7, "max_tokens": 16}
    assert record["examples"] == 2 and record["skipped_cases"] == ["ent-001"]
    # every example got a verdict or a counted failure
    assert record["overall"]["n"] + record["grader_failures"]["count"] == record["examples"]
    assert sum(record["overall"]["confusion"].values()) == record["overall"]["n"]
    assert set(record["tasks"]) <= {"claim_support", "faithfulness"}
    assert f"prompt {PROMPT_VERSION}" in stdout and "grader failures:" in stdout and "Traceback" not in stderr


@pytest.mark.integration
def test_a_dead_port_is_one_clear_error(tiny_cases: Path, capsys) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    code, stdout, stderr = run_cli(["judge", "calibrate", str(tiny_cases), "--llm", "openai:gone", "--base-url", url],
                                   capsys)
    said = " ".join((stdout + stderr).split())
    assert code == 2 and "cannot reach the LLM server" in said and "--base-url" in said
    assert said.count("error:") == 1 and "Traceback" not in said


@pytest.mark.integration
def test_a_server_that_never_answers_is_one_clear_error(tiny_cases: Path, capsys) -> None:
    with SilentServer() as server:
        code, stdout, stderr = run_cli(["judge", "calibrate", str(tiny_cases), "--llm", "openai:hung", "--base-url",
                                        server.url, "--llm-timeout", "0.5", "--llm-retries", "0"], capsys)
        assert server.connections == 1  # the model list, asked once; nothing was graded
    said = " ".join((stdout + stderr).split())
    assert code == 2 and "no complete answer" in said and "--llm-timeout" in said
    assert said.count("error:") == 1 and "Traceback" not in said


def _models_then(answer):
    """A loopback OpenAI-compatible stub: it lists one model, and ``answer(request)`` replies to each chat call."""
    def respond(request: dict) -> StubReply:
        if request["method"] == "GET":
            return StubReply(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
        return answer(request)
    return respond


@pytest.mark.integration
def test_replies_that_are_no_verdict_are_counted_failures_with_the_reply(tiny_cases: Path, tmp_path: Path,
                                                                         capsys) -> None:
    def answer(request: dict) -> StubReply:
        user = request["json"]["messages"][-1]["content"]
        return StubReply(200, chat_body('{"verdict": "yes"}' if "Claim:" in user else "maybe, it depends"))

    with StubServer(_models_then(answer)) as server:
        code, stdout, stderr = run_cli(["judge", "calibrate", str(tiny_cases), "--llm", "openai:stub-model",
                                        "--base-url", server.url, "--resamples", "20", "--out",
                                        str(tmp_path / "c.json")], capsys)
    assert code == 0, stderr
    record = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    (failure,) = record["grader_failures"]["items"]
    assert failure["item"] == "faithful:answer" and failure["reply"] == "maybe, it depends"
    assert record["overall"]["n"] == 1 and record["overall"]["confusion"]["tp"] == 1  # a failure is not a "no"
    assert set(record["tasks"]) == {"claim_support"} and record["judge"]["model_id"] == "stub-model"
    assert "grader failures: 1 of 2 examples" in " ".join(stdout.split())


@pytest.mark.integration
def test_a_server_failing_every_call_stops_the_run_with_one_error(capsys) -> None:
    with StubServer(_models_then(lambda request: StubReply(500, {"error": {"message": "model crashed"}}))) as server:
        code, stdout, stderr = run_cli(["judge", "calibrate", str(ENTERPRISE), "--llm", "openai:stub-model",
                                        "--base-url", server.url, "--llm-retries", "0"], capsys)
        chat_calls = sum(1 for r in server.requests if r["method"] == "POST")
    said = " ".join((stdout + stderr).split())
    assert code == 2 and "the grader stopped after 3 failed calls in a row" in said and "model crashed" in said
    assert chat_calls == 3 and said.count("error:") == 1 and "Traceback" not in said
