from __future__ import annotations


import pytest

from hoprag.errors import ConfigError
from hoprag.evaluation.runner import evaluate
from hoprag.index.store import build_index, load_index
from hoprag.pipeline.engine import MultiHopConfig, SingleShotConfig, SingleShotEngine
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.multihop import MultiHopEngine
from hoprag.pipeline.plan import QuestionPlanner
from hoprag.records import Document, Trace

pytestmark = pytest.mark.unit

RUSH = (
    'Which Canadian rock band released a song called "Counterparts" and had a drummer who was inducted '
    "into the Modern Drummer Hall of Fame?"
)


def engine(index, **config):
    return MultiHopEngine(index.retriever(), index.chunks, index.documents, MultiHopConfig(**config))


def strip_latency(trace: Trace) -> dict:
    data = trace.to_dict()
    data["latency_ms"] = 0
    data["timings"] = {}
    for step in data["steps"]:
        step["latency_ms"] = step["cumulative_ms"] = 0
    return data


def test_single_shot_is_one_call_with_top_k_as_context(hotpot_index):
    trace = SingleShotEngine(hotpot_index.retriever(), hotpot_index.chunks, hotpot_index.documents, SingleShotConfig(k=4)).answer(
        RUSH, case_id="c1"
    )
    assert len(trace.steps) == 1 and trace.steps[0].issued_query == RUSH
    assert [e.chunk_id for e in trace.evidence] == [h.chunk_id for h in trace.steps[0].hits]
    assert len(trace.evidence) == 4 and trace.stop_reason == "single_shot" and trace.engine == "single"


def test_multihop_follows_a_bridge_and_completes_the_real_chain(hotpot_index, hotpot_slice):
    case = hotpot_slice.cases[0]
    assert case.query == RUSH
    trace = engine(hotpot_index).answer(case.query, case_id=case.case_id)
    hop2 = [s for s in trace.steps if s.hop == 2]
    assert hop2, "the engine must issue conditioned second-hop queries"
    for step in hop2:
        assert step.depends_on == ("s1",)
        assert step.bridge["value"] and step.issued_query.endswith(RUSH)
        assert step.bridge["value"] in step.issued_query
    cumulative = [s.cumulative_ms for s in trace.steps]
    assert cumulative == sorted(cumulative)
    result = evaluate([case], [trace], ks=(5,))
    assert result.aggregate["chain_coverage@5"] == 1.0
    # Every claim cites evidence the trace holds.
    held = {e.chunk_id for e in trace.evidence}
    assert trace.answer.claims and all(c.chunk_id in held for cl in trace.answer.claims for c in cl.citations)


def test_multihop_beats_single_shot_on_the_slice(hotpot_index, hotpot_slice):
    cases = hotpot_slice.cases
    single = make_engine("single", hotpot_index)
    multi = make_engine("multihop", hotpot_index)
    s = evaluate(cases, [single.answer(c.query, case_id=c.case_id) for c in cases], ks=(2,))
    m = evaluate(cases, [multi.answer(c.query, case_id=c.case_id) for c in cases], ks=(2,))
    assert m.aggregate["chain_coverage@2"] > s.aggregate["chain_coverage@2"]


def test_multihop_is_deterministic(hotpot_index):
    first = engine(hotpot_index).answer(RUSH, case_id="x", run_id="r")
    second = engine(hotpot_index).answer(RUSH, case_id="x", run_id="r")
    assert strip_latency(first) == strip_latency(second)


def test_max_hops_one_stops_after_the_first_hop(hotpot_index):
    trace = engine(hotpot_index, max_hops=1).answer(RUSH)
    assert trace.stop_reason == "max_hops" and {s.hop for s in trace.steps} == {1}
    # the judge never said the evidence suffices: the answer is flagged, not complete-sounding
    assert trace.answer.partial and not trace.answer.abstained


def test_no_evidence_abstains(hotpot_index):
    trace = engine(hotpot_index).answer("zzzqqq xxyyzz")
    assert trace.stop_reason == "no_evidence"
    assert trace.answer.abstained and trace.answer.text == "" and trace.evidence == ()


def test_no_new_evidence_when_hop_one_holds_the_whole_corpus(tmp_path):
    docs = [
        Document(id="a", title="Alpha Station", text="Alpha Station is served by the Beta Line."),
        Document(id="b", title="Beta Line", text="The Beta Line runs 40 miles to Gamma Town."),
    ]
    build_index(docs, tmp_path / "idx")
    index = load_index(tmp_path / "idx")
    # the question as one sub-query (the offline planner would chain its nested "the line that serves
    # …"), so what stops is the bridge hops, which find nothing new
    single = MultiHopEngine(index.retriever(), index.chunks, index.documents, planner=QuestionPlanner())
    trace = single.answer("How long is the line that serves Alpha Station?")
    assert {e.doc_id for e in trace.evidence} == {"a", "b"}
    assert trace.stop_reason in {"no_new_evidence", "no_bridge"}


def test_loop_detected_when_hops_return_only_parts_of_held_documents(tmp_path):
    # One long document, chunked: every conditioned hop can only find more chunks of what is held.
    sentences = [f"Orion Station item {i} lists the Halyard Depot and the Wren Yard for route {i}." for i in range(60)]
    docs = [Document(id="long", title="Orion Station", text=" ".join(sentences))]
    build_index(docs, tmp_path / "idx")
    index = load_index(tmp_path / "idx")
    trace = engine(index, keep_first_hop=1, keep_per_branch=1).answer("Which depot does Orion Station list?")
    assert len(index.chunks) >= 3
    assert trace.stop_reason == "loop_detected"


def test_oracle_seed_replaces_hop_one(hotpot_index, hotpot_slice):
    case = hotpot_slice.cases[0]
    fact = case.facts[case.valid_chains[0][0]]
    seed = [c.id for c in hotpot_index.chunks.values() if c.doc_id == fact.source_id]
    trace = engine(hotpot_index).answer(case.query, seed_chunks=seed)
    first = trace.steps[0]
    assert first.bridge == {"oracle": True} and [h.chunk_id for h in first.hits] == seed
    assert all(h.retriever == "oracle" for h in first.hits)
    with pytest.raises(ConfigError, match="not in the index"):
        engine(hotpot_index).answer(case.query, seed_chunks=["nope#0"])


def test_factory_rejects_unknown_engines(hotpot_index):
    with pytest.raises(ConfigError, match="valid: single, multihop"):
        make_engine("magic", hotpot_index)


def test_config_rejects_unknown_fields():
    with pytest.raises(ValueError):
        MultiHopConfig(max_hop=2)  # typo of max_hops


def test_a_plan_runs_all_its_layers_but_bridge_following_stops_at_bridge_hops(hotpot_index):
    # a nested question of four lookups gets four hops; an open-ended question stops following
    # bridges at bridge_hops (3), and max_hops stays the hard cap for both
    nested = "What is the capital of the country where the director of the sequel of Night Train was born?"
    plan_hops = {s.hop for s in engine(hotpot_index, min_evidence=50).answer(nested).steps}
    assert plan_hops == {1, 2, 3, 4}
    assert {s.hop for s in engine(hotpot_index, min_evidence=50, max_hops=2).answer(nested).steps} == {1, 2}
    trace = engine(hotpot_index, min_evidence=50).answer(RUSH)
    assert trace.stop_reason == "max_hops" and max(s.hop for s in trace.steps) == 3


class AlwaysSufficient:
    """A judge satisfied by anything it is shown (to see when the engine asks it)."""

    name = "always"

    def sufficient(self, question, evidence) -> bool:
        return True


def test_the_judge_is_asked_only_once_a_plans_lookups_are_done(hotpot_index):
    nested = "What is the capital of the country where the director of the sequel of Night Train was born?"
    judged = MultiHopEngine(hotpot_index.retriever(), hotpot_index.chunks, hotpot_index.documents, judge=AlwaysSufficient())
    trace = judged.answer(nested)
    # four lookups: a satisfied judge does not cut the chain after its second hop
    assert {s.hop for s in trace.steps} == {1, 2, 3, 4} and trace.stop_reason == "sufficient"
    # a question the planner leaves whole is judged after its first bridge hop, as before
    plain = judged.answer(RUSH)
    assert max(s.hop for s in plain.steps) == 2 and plain.stop_reason == "sufficient"
