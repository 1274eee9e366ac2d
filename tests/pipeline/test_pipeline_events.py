"""The engines' typed events for one question: their order, what they carry, that a listener never
changes the trace, and that a model synthesiser streams its answer through LLM.stream when tokens are asked for."""

from __future__ import annotations

import threading
import time

import pytest

from hoprag.llm import ScriptedLLM
from hoprag.pipeline.cited_text import CITED_SYSTEM
from hoprag.pipeline.engine import MultiHopConfig, SingleShotConfig, SingleShotEngine
from hoprag.pipeline.events import (
    AnswerReady,
    HitsFound,
    HopStarted,
    JudgeDecided,
    JudgeStarted,
    PlanMade,
    PlanStarted,
    SynthesisStarted,
    Token,
    fan_out,
    progress_line,
)
from hoprag.pipeline.llm_roles import LLMSynthesizer
from hoprag.pipeline.multihop import MultiHopEngine
from hoprag.pipeline.roles import ExtractiveSynthesizer
from hoprag.records import Trace

pytestmark = pytest.mark.unit

RUSH = (
    'Which Canadian rock band released a song called "Counterparts" and had a drummer who was inducted '
    "into the Modern Drummer Hall of Fame?"
)


def multihop(index, **options) -> MultiHopEngine:
    return MultiHopEngine(index.retriever(), index.chunks, index.documents, MultiHopConfig(), **options)


def names(events: list) -> list[str]:
    """Event names, with each run of HitsFound folded into one entry (their order is the threads')."""
    out: list[str] = []
    for event in events:
        name = type(event).__name__
        if not (name == "HitsFound" and out and out[-1] == name):
            out.append(name)
    return out


def same_trace(a: Trace, b: Trace) -> bool:
    def plain(t: Trace) -> dict:
        data = t.to_dict()
        data["latency_ms"], data["timings"] = 0, {}
        for step in data["steps"]:
            step["latency_ms"] = step["cumulative_ms"] = 0
        return data

    return plain(a) == plain(b)


def test_single_shot_reports_its_one_hop_then_the_answer_word_by_word(hotpot_index) -> None:
    engine = SingleShotEngine(hotpot_index.retriever(), hotpot_index.chunks, hotpot_index.documents, SingleShotConfig(k=4))
    events: list = []
    trace = engine.answer(RUSH, case_id="c1", on_event=events.append, tokens=True)
    tokens = [e.text for e in events if isinstance(e, Token)]
    step = trace.steps[0]
    assert events[:3] == [HopStarted(1, RUSH), HitsFound(1, RUSH, step.hits), SynthesisStarted(1)]
    assert events[3:-1] == [Token(t) for t in tokens] and "".join(tokens) == trace.answer.text
    assert events[-1] == AnswerReady(trace)


def test_multihop_reports_plan_hops_hits_judge_synthesis_and_the_trace(hotpot_index) -> None:
    events: list = []
    trace = multihop(hotpot_index).answer(RUSH, case_id="c1", on_event=events.append, tokens=True)
    # the offline plan is the question itself; hop 2 follows the bridges hop 1 found; the judge is
    # asked once, after hop 2, and finds the nine held passages sufficient; the answer is one word
    assert names(events) == ["PlanStarted", "PlanMade", "HopStarted", "HitsFound", "HopStarted", "HitsFound",
                             "JudgeStarted", "JudgeDecided", "SynthesisStarted", "Token", "AnswerReady"]
    assert events[0] == PlanStarted()
    assert events[1] == PlanMade("offline", tuple(multihop(hotpot_index).planner.plan(RUSH).sub_queries))
    hops = [e for e in events if isinstance(e, HopStarted)]
    assert hops[0] == HopStarted(1, RUSH)
    assert hops[1].hop == 2 and hops[1].detail.startswith("conditioned on ")
    # every retrieval step of the trace was reported with the hits it holds, in its hop
    found = {(e.hop, e.query): e.hits for e in events if isinstance(e, HitsFound)}
    assert found == {(s.hop, s.issued_query): s.hits for s in trace.steps}
    judged = [e for e in events if isinstance(e, (JudgeStarted, JudgeDecided))]
    assert judged == [JudgeStarted(2, 9), JudgeDecided(2, 9, True)] and trace.stop_reason == "sufficient"
    assert [e for e in events if isinstance(e, (SynthesisStarted, Token))] == [SynthesisStarted(2), Token("Rush")]
    assert trace.answer.text == "Rush" and events[-1] == AnswerReady(trace)


def test_no_tokens_unless_asked_and_a_listener_never_changes_the_trace(hotpot_index) -> None:
    engine = multihop(hotpot_index)
    quiet = engine.answer(RUSH, case_id="c1")
    events: list = []
    heard = engine.answer(RUSH, case_id="c1", on_event=events.append)
    streamed = engine.answer(RUSH, case_id="c1", on_event=lambda e: None, tokens=True)
    assert not any(isinstance(e, Token) for e in events)
    assert same_trace(quiet, heard) and same_trace(quiet, streamed)


def test_the_listener_is_never_called_from_two_threads_at_once(hotpot_index) -> None:
    inside = threading.Lock()
    overlaps: list[str] = []
    threads: set[str] = set()

    def slow(event) -> None:
        if not inside.acquire(blocking=False):
            overlaps.append(type(event).__name__)
            return
        try:
            threads.add(threading.current_thread().name)
            time.sleep(0.002)  # long enough for a concurrent retrieval of the hop to report meanwhile
        finally:
            inside.release()

    multihop(hotpot_index).answer(RUSH, on_event=slow)
    assert overlaps == [] and len(threads) > 1  # hop 2's hits came from the engine's threads, one at a time


def test_the_engine_built_with_a_listener_reports_every_question(hotpot_index) -> None:
    events: list = []
    engine = multihop(hotpot_index, on_event=events.append)
    engine.answer(RUSH)
    engine.answer(RUSH)
    assert sum(isinstance(e, AnswerReady) for e in events) == 2
    one: list = []
    engine.answer(RUSH, on_event=one.append)  # a question's own listener hears that question instead
    assert sum(isinstance(e, AnswerReady) for e in events) == 2 and isinstance(one[-1], AnswerReady)


def test_a_model_synthesiser_streams_through_llm_stream_when_tokens_are_asked(hotpot_index) -> None:
    llm = ScriptedLLM(default="Rush recorded Counterparts [E1].")
    events: list = []
    engine = multihop(hotpot_index, synthesizer=LLMSynthesizer(llm, ExtractiveSynthesizer()))
    trace = engine.answer(RUSH, on_event=events.append, tokens=True)
    tokens = [e.text for e in events if isinstance(e, Token)]
    assert tokens == ["Rush ", "recorded ", "Counterparts ", "[E1]."]  # the model's stream, piece by piece
    call = llm.history[-1]
    assert call.json_schema is None and call.system == CITED_SYSTEM  # asked for cited text, not JSON
    assert trace.answer.text == "Rush recorded Counterparts ."  # the marker taken out, as the stream's reader does
    assert [c.chunk_id for c in trace.answer.claims[0].citations] == [trace.evidence[0].chunk_id]
    # the stream's tokens are counted: words and punctuation of the reply (Rush recorded Counterparts [ E1 ] .)
    assert trace.usage.completion_tokens == 7 and trace.usage.prompt_tokens > 0


def test_without_tokens_the_model_synthesiser_answers_in_json_as_before(hotpot_index) -> None:
    llm = ScriptedLLM(default={"answer": "Rush", "claims": [{"text": "Rush recorded it.", "citations": ["E1"]}]})
    engine = multihop(hotpot_index, synthesizer=LLMSynthesizer(llm, ExtractiveSynthesizer()))
    trace = engine.answer(RUSH, on_event=lambda e: None)
    assert llm.history[-1].json_schema is not None and trace.answer.text == "Rush"


def test_a_failed_stream_falls_back_to_the_offline_answer_streamed_after_it(hotpot_index) -> None:
    from hoprag.llm import LLMResponseError

    llm = ScriptedLLM(default=LLMResponseError("the server closed the connection", model="scripted"))
    events: list = []
    engine = multihop(hotpot_index, synthesizer=LLMSynthesizer(llm, ExtractiveSynthesizer()))
    trace = engine.answer(RUSH, on_event=events.append, tokens=True)
    assert [e.text for e in events if isinstance(e, Token)] == ["Rush"]  # the offline answer, nothing before it
    assert trace.answer.text == "Rush"
    assert any("stream failed (LLMResponseError" in w for w in trace.warnings)


def test_progress_lines_are_the_cli_words_for_each_event() -> None:
    assert progress_line(PlanStarted()) == "planning  …"
    assert progress_line(HopStarted(2, "conditioned on Rush")) == "hop 2 · searching conditioned on Rush …"
    assert progress_line(JudgeStarted(2, 9)) == "judging 9 passages held …"
    assert progress_line(SynthesisStarted(2)) == "synthesising  …"
    assert progress_line(Token("Rush")) is None and progress_line(JudgeDecided(2, 9, True)) is None


def test_fan_out_calls_each_listener_in_order() -> None:
    heard: list[str] = []
    listen = fan_out(lambda e: heard.append("a"), None, lambda e: heard.append("b"))
    listen(PlanStarted())
    assert heard == ["a", "b"]
    assert fan_out(None, None) is None


def test_ask_prints_a_progress_line_per_event(hotpot_slice, tmp_path, capsys) -> None:
    import json
    import sys

    from hoprag.cli import main
    from hoprag.index.store import build_index

    build_index(hotpot_slice.documents, tmp_path / "index")

    def ask(*flags: str) -> tuple[str, str]:
        saved, sys.argv = sys.argv, ["hoprag", "ask", str(tmp_path / "index"), RUSH, "--no-graph", *flags]
        try:
            main()
        except SystemExit as exc:
            assert not exc.code
        finally:
            sys.argv = saved
        captured = capsys.readouterr()
        return captured.out, captured.err

    _, progress = ask()
    bridges = "Into Existence, Keith John Moon, Steven Bruce"  # hop 1's first three bridges (the test above)
    lines = ["planning  …", f"hop 1 · searching {RUSH} …", f"hop 2 · searching conditioned on {bridges} …",
             "judging 9 passages held …", "synthesising  …"]
    assert progress.split() == " ".join(lines).split()  # the console wraps long lines at its width
    out, quiet = ask("--format", "json")
    assert quiet == "" and json.loads(out)["answer"]["text"] == "Rush"  # JSON out: no progress lines
