"""The graph hop: personalised PageRank against an independent dense solve, proposals, the trace, clearance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import sparse

from hoprag.security.acl import Clearance, LeakDetector
from hoprag.datasets.importers import import_dataset
from hoprag.datasets.schema import load_cases
from hoprag.errors import ConfigError
from hoprag.index.graph_build import build_entity_graph
from hoprag.index.store import IndexConfig, build_index, load_index
from hoprag.ingest.chunking import ChunkConfig, chunk_document
from hoprag.ingest.loaders import load_corpora
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.graph_hop import GraphHop, personalized_pagerank, transition_matrix
from hoprag.pipeline.local_ppr import BUDGET, EPSILON, PushResult, PushScratch, forward_push
from hoprag.records import Document

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"
DATA = ROOT / "tests" / "data"


def dense_ppr(adjacency: np.ndarray, seed: np.ndarray, damping: float) -> np.ndarray:
    """The PPR fixed point r = (1 - d) s + d Pᵀ r solved directly: (I - d Pᵀ) r = (1 - d) s."""
    degree = adjacency.sum(axis=1)
    transition = np.zeros_like(adjacency)
    for i, d in enumerate(degree):
        if d > 0:
            transition[i] = adjacency[i] / d
    n = len(seed)
    return np.linalg.solve(np.eye(n) - damping * transition.T, (1 - damping) * seed)


def test_power_iteration_meets_the_dense_fixed_point() -> None:
    # 6 nodes: a weighted cycle with a chord, a leaf and a node without edges (it keeps no mass)
    a = np.zeros((6, 6))
    for i, j, w in [(0, 1, 1.0), (1, 2, 2.0), (2, 3, 1.0), (3, 0, 0.5), (0, 2, 1.0), (3, 4, 3.0)]:
        a[i, j] = a[j, i] = w
    seed = np.array([0.7, 0.0, 0.0, 0.3, 0.0, 0.0])
    for damping in (0.5, 0.85):
        expected = dense_ppr(a, seed, damping)
        got = personalized_pagerank(transition_matrix(sparse.csr_matrix(a)), seed, damping=damping,
                                    iterations=500, tolerance=1e-14)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
        assert got[5] == 0.0
    # by hand, for one step: after a single iteration r = (1-d) s + d Pᵀ s
    p_t = transition_matrix(sparse.csr_matrix(a))
    one = personalized_pagerank(p_t, seed, damping=0.5, iterations=1)
    # node 1 has no seed mass; it gets d × 0.7 × its share of node 0's edge weight (1 of 1 + 1 + 0.5)
    assert one[1] == pytest.approx(0.5 * 0.7 * 1.0 / (1.0 + 1.0 + 0.5))


def test_the_graph_hop_walks_the_entity_chunk_graph_as_the_dense_reference_does() -> None:
    docs = {
        "a": Document(id="a", title="Neil Peart", text="Neil Peart was the drummer of Rush. He was born in Hamilton."),
        "b": Document(id="b", title="Rush (band)", text="Rush was formed in Toronto. Neil Peart joined in 1974."),
        "c": Document(id="c", title="Toronto", text="Toronto is the capital of Ontario."),
        "d": Document(id="d", title="Hamilton, Ontario", text="Hamilton lies on Lake Ontario."),
    }
    chunks = [c for d in docs.values() for c in chunk_document(d, ChunkConfig())]
    graph, _ = build_entity_graph(chunks, docs)
    hop = GraphHop(graph, damping=0.5, epsilon=1e-14)
    proposal = hop.propose("Where was the drummer of Rush born?", {"b#0": 1.0}, limit=2, top=10)
    assert proposal is not None
    # seeds: the question's entity "rush" (specificity 1/2) and the held chunk, half each
    assert [k for k, _ in proposal.seed_entities] == ["rush"]
    n_e, n_c = graph.entity_chunk.shape
    b = graph.entity_chunk.toarray().astype(float)
    adjacency = np.block([[np.zeros((n_e, n_e)), b], [b.T, graph.chunk_chunk.toarray()]])
    seed = np.zeros(n_e + n_c)
    seed[graph.entity_index["rush"]] = 0.5
    seed[n_e + graph.chunk_index["b#0"]] = 0.5
    expected = dense_ppr(adjacency, seed, 0.5)
    ranked = dict(proposal.ranked)
    for chunk_id, position in graph.chunk_index.items():
        assert ranked.get(chunk_id, 0.0) == pytest.approx(expected[n_e + position], abs=1e-11)
    # the held chunk is never proposed; the best other chunks are, best first, with their parent
    proposed = [c for c, _ in proposal.proposed]
    assert "b#0" not in proposed and proposed[0] == "a#0"
    assert proposal.parents["a#0"] == "b#0"
    assert [s for _, s in proposal.proposed] == sorted((s for _, s in proposal.proposed), reverse=True)


def csr_edges(rows: sparse.csr_matrix, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The edges of ``nodes`` as forward push reads them: (owner position, neighbour, weight)."""
    owner = np.repeat(np.arange(len(nodes)), np.diff(rows.indptr)[nodes])
    at = np.concatenate([np.arange(rows.indptr[u], rows.indptr[u + 1]) for u in nodes])
    return owner, rows.indices[at].astype(np.int64), rows.data[at]


def test_forward_push_meets_the_dense_fixed_point_and_stays_in_the_seeds_component() -> None:
    # two components: the weighted cycle of the test above (nodes 0-4, 5 without edges) and a pair 6-7
    a = np.zeros((8, 8))
    for i, j, w in [(0, 1, 1.0), (1, 2, 2.0), (2, 3, 1.0), (3, 0, 0.5), (0, 2, 1.0), (3, 4, 3.0), (6, 7, 1.0)]:
        a[i, j] = a[j, i] = w
    rows = sparse.csr_matrix(a)
    seen: list[int] = []

    def edges(nodes):
        seen.extend(nodes.tolist())
        return csr_edges(rows, nodes)

    def floor(nodes):
        return np.zeros(len(nodes))  # no bound known: every node with residual is expanded once

    seed = {0: 0.7, 3: 0.3}
    expected = dense_ppr(a, np.array([0.7, 0, 0, 0.3, 0, 0, 0, 0]), 0.5)
    nodes, scores, *_ = forward_push(edges, floor, 8, seed, damping=0.5, epsilon=1e-13)
    assert set(nodes) <= {0, 1, 2, 3, 4} and set(seen) <= {0, 1, 2, 3, 4}  # never the other component
    np.testing.assert_allclose(scores, expected[nodes], rtol=0, atol=1e-11)
    # coarse epsilon: fewer rounds, and the scores stay lower bounds of the fixed point
    coarse_nodes, coarse, *_ = forward_push(edges, floor, 8, seed, damping=0.5, epsilon=1e-2)
    assert np.all(coarse <= expected[coarse_nodes] + 1e-15)
    # a seed without edges keeps (1 - d) of its mass and passes none on, as in the power iteration
    lone_nodes, lone, *_ = forward_push(edges, floor, 8, {5: 1.0}, damping=0.5)
    assert list(lone_nodes) == [5] and lone[0] == pytest.approx(0.5)


def test_the_edge_budget_pushes_the_heaviest_residual_first_and_records_what_it_left() -> None:
    a = np.zeros((8, 8))
    for i, j, w in [(0, 1, 1.0), (1, 2, 2.0), (2, 3, 1.0), (3, 0, 0.5), (0, 2, 1.0), (3, 4, 3.0), (6, 7, 1.0)]:
        a[i, j] = a[j, i] = w
    rows = sparse.csr_matrix(a)

    def edges(nodes):
        return csr_edges(rows, nodes)

    def work(nodes):
        return np.diff(rows.indptr)[nodes]

    def floor(nodes):
        return np.zeros(len(nodes))

    seed = {0: 0.7, 3: 0.3}
    expected = dense_ppr(a, np.array([0.7, 0, 0, 0.3, 0, 0, 0, 0]), 0.5)
    # nodes 0 and 3 hold three edges each; a budget of three pushes only the heavier, node 0: it keeps
    # 0.5 × 0.7 and spreads 0.35 over its edge weights 1 (to 1), 1 (to 2) and 0.5 (to 3), of 2.5
    cut = forward_push(edges, floor, 8, seed, damping=0.5, epsilon=1e-13, work=work, budget=3)
    assert cut.truncated and cut.edges == 3
    assert list(cut.nodes) == [0, 1, 2, 3]
    np.testing.assert_allclose(cut.scores, [0.35, 0.5 * 0.14, 0.5 * 0.14, 0.5 * (0.3 + 0.07)], rtol=0, atol=1e-15)
    assert cut.residual == pytest.approx(0.14 + 0.14 + 0.37)  # 1 − 0.35 settled: nothing is lost
    assert np.all(cut.scores <= expected[cut.nodes] + 1e-15)  # still lower bounds of the fixed point
    # a budget the walk never reaches changes nothing, float for float
    free = forward_push(edges, floor, 8, seed, damping=0.5, epsilon=1e-13, work=work)
    roomy = forward_push(edges, floor, 8, seed, damping=0.5, epsilon=1e-13, work=work, budget=free.edges)
    assert not roomy.truncated and not free.truncated and roomy.edges == free.edges
    assert np.array_equal(roomy.nodes, free.nodes) and np.array_equal(roomy.scores, free.scores)
    # a budget smaller than every seed's edges pushes nothing: the seeds keep (1 - d) of their mass
    none = forward_push(edges, floor, 8, seed, damping=0.5, work=work, budget=2)
    assert none.truncated and none.edges == 0 and list(none.nodes) == [0, 3]
    np.testing.assert_allclose(none.scores, [0.35, 0.15])
    with pytest.raises(ValueError, match="budget needs work"):
        forward_push(edges, floor, 8, seed, damping=0.5, budget=3)


def test_a_reused_scratch_gives_the_same_walk_and_is_left_clean() -> None:
    a = np.zeros((5, 5))
    for i, j, w in [(0, 1, 1.0), (1, 2, 2.0), (2, 3, 1.0), (3, 0, 0.5), (3, 4, 3.0)]:
        a[i, j] = a[j, i] = w
    rows = sparse.csr_matrix(a)

    def edges(nodes):
        return csr_edges(rows, nodes)

    scratch = PushScratch(5)
    fresh = forward_push(edges, lambda n: np.zeros(len(n)), 5, {1: 1.0}, damping=0.5)
    for _ in range(2):
        again = forward_push(edges, lambda n: np.zeros(len(n)), 5, {1: 1.0}, damping=0.5, scratch=scratch)
        assert np.array_equal(again.nodes, fresh.nodes) and np.array_equal(again.scores, fresh.scores)
        for array in (scratch.estimate, scratch.residual, scratch.degree, scratch.known, scratch.touched):
            assert not array.any()


class PowerIterationHop(GraphHop):
    """The walk the local push replaced: power iteration over the whole graph."""

    def __init__(self, graph, **kw) -> None:
        super().__init__(graph, **kw)
        keep = sparse.diags((self.chunk_visible if self.chunk_visible is not None else np.ones(graph.n_chunks)).astype(float))
        mentions = graph.entity_chunk.astype(float) @ keep
        links = keep @ graph.chunk_chunk.astype(float) @ keep
        self.transition_t = transition_matrix(sparse.bmat([[None, mentions], [mentions.T, links]], format="csr"))

    def walk(self, seed):
        vector = np.zeros(self.transition_t.shape[0])
        for node, mass in seed.items():
            vector[node] = mass
        scores = personalized_pagerank(self.transition_t, vector)
        nodes = np.flatnonzero(scores > 0)
        return PushResult(nodes, scores[nodes], self.transition_t.nnz, 0.0, False)


@pytest.fixture(scope="module")
def hotpot_index(tmp_path_factory):
    result = import_dataset("hotpotqa", [DATA / "hotpotqa_dev_slice.json"])
    out = tmp_path_factory.mktemp("hotpot-graph")
    build_index(result.documents, out)
    return result, load_index(out)


def test_the_engine_records_every_graph_step_as_a_retrieval_call(hotpot_index) -> None:
    result, index = hotpot_index
    engine = make_engine("multihop", index)
    assert engine.graph_hop is not None  # on by default when the index holds a graph
    traces = [engine.answer(c.query, case_id=c.case_id) for c in result.cases]
    graph_steps = [s for t in traces for s in t.steps if s.bridge.get("graph") == "ppr"]
    assert graph_steps
    for trace in traces:
        for position, step in enumerate(trace.steps):
            if step.bridge.get("graph") != "ppr":
                continue
            assert step.hop >= 2 and all(h.retriever == "graph" for h in step.hits)
            assert list(step.selected) == [h.chunk_id for h in step.hits] == step.bridge["proposed"]
            assert set(step.bridge) >= {"seed_entities", "seed_chunks", "top_entities", "top_chunks", "parents", "walk"}
            walk = step.bridge["walk"]
            assert 0 < walk["edges"] <= BUDGET and 0.0 <= walk["residual_left"] < 1.0 and not walk["truncated"]
            assert step.issued_query.startswith("ppr")
            held_before = {c for s in trace.steps[:position] for c in s.selected}
            assert not set(step.selected) & {c for c, _ in step.bridge["seed_chunks"]}
            assert {c for c, _ in step.bridge["seed_chunks"]} <= held_before
            assert [h.rank for h in step.hits] == list(range(1, len(step.hits) + 1))
    # off: no graph step, and the config hash is the one graph-less engines always had
    plain = make_engine("multihop", index, graph=False)
    assert plain.graph_hop is None and plain.config_hash != engine.config_hash
    assert all(s.bridge.get("graph") is None for c in result.cases for s in plain.answer(c.query).steps)


def test_the_config_hash_names_the_walks_parameters(hotpot_index) -> None:
    _, index = hotpot_index
    hashes = set()
    for change in ({}, {"epsilon": 1e-5}, {"budget": 10_000}, {"budget": None}, {"damping": 0.6}):
        engine = make_engine("multihop", index)
        engine.graph_hop = GraphHop(index.graph, **change)
        engine.refresh_config_hash()
        hashes.add(engine.config_hash)
        assert engine.graph_hop.describe().startswith("ppr(")
    assert len(hashes) == 5  # a traces file cannot be resumed under another walk
    same = make_engine("multihop", index)
    assert same.config_hash == make_engine("multihop", index).config_hash


def test_the_local_walk_proposes_what_the_power_iteration_proposes(hotpot_index) -> None:
    result, index = hotpot_index
    engine = make_engine("multihop", index)
    calls = []
    propose = engine.graph_hop.propose
    engine.graph_hop.propose = lambda q, held, **kw: calls.append((q, dict(held), kw)) or propose(q, held, **kw)
    for case in result.cases:
        engine.answer(case.query)
    assert calls
    reference, local = PowerIterationHop(index.graph), GraphHop(index.graph)
    for question, held, kw in calls:
        want, got = reference.propose(question, held, **kw), local.propose(question, held, **kw)
        assert [c for c, _ in got.proposed] == [c for c, _ in want.proposed]
        assert got.seed_entities == want.seed_entities and got.seed_chunks == want.seed_chunks
        assert got.parents == want.parents
        scores = dict(want.ranked)
        for chunk_id, score in got.ranked:  # lower bounds, within what the threshold leaves behind
            assert score <= scores.get(chunk_id, 0.0) + 1e-9 and score == pytest.approx(scores[chunk_id], abs=50 * EPSILON)


def test_the_graph_hop_proposes_beside_a_plans_last_lookup(hotpot_index) -> None:
    result, index = hotpot_index
    case = next(c for c in result.cases if c.query.startswith("What other country does the league"))
    trace = make_engine("multihop", index).answer(case.query)
    assert len(trace.plan["sub_queries"]) == 2  # a nested question: two dependent lookups, hops 1 and 2
    planned = [s for s in trace.steps if s.bridge.get("order") == 2]
    graph = [s for s in trace.steps if s.bridge.get("graph") == "ppr"]
    assert planned and graph and graph[0].hop == planned[0].hop == 2
    # it walks from what was held before the hop: the first lookup's passages, not the hop's own finds
    seeds = {c for c, _ in graph[0].bridge["seed_chunks"]}
    assert seeds <= {c for s in trace.steps if s.hop == 1 for c in s.selected}
    assert trace.steps.index(graph[0]) > max(trace.steps.index(s) for s in planned)
    # without the graph the same plan runs with no graph step
    plain = make_engine("multihop", index, graph=False).answer(case.query)
    assert not [s for s in plain.steps if s.bridge.get("graph")]


def test_graph_asked_of_an_index_without_one_is_refused(tmp_path) -> None:
    result = import_dataset("hotpotqa", [DATA / "hotpotqa_dev_slice.json"])
    build_index(result.documents, tmp_path / "plain", IndexConfig(graph=False))
    index = load_index(tmp_path / "plain")
    assert make_engine("multihop", index).graph_hop is None  # the default quietly does without
    with pytest.raises(ConfigError, match="--graph needs an index built with its entity graph.*--no-graph"):
        make_engine("multihop", index, graph=True)


@pytest.fixture(scope="module")
def enterprise(tmp_path_factory):
    documents = load_corpora([ENTERPRISE / "corpus.jsonl"])
    out = tmp_path_factory.mktemp("enterprise-graph")
    build_index(documents, out)
    return documents, load_index(out), load_cases(ENTERPRISE / "cases.jsonl")


@pytest.mark.parametrize(("level", "budget"), (("public", BUDGET), ("internal", BUDGET), ("public", 60)))
def test_the_graph_never_proposes_or_reveals_a_chunk_above_the_clearance(enterprise, level, budget) -> None:
    documents, index, cases = enterprise
    clearance = Clearance(level)
    hidden_docs = {d.id for d in documents if not clearance.allows(d.acl)}
    assert hidden_docs
    hidden_chunks = {c.id for c in index.chunks.values() if c.doc_id in hidden_docs}
    graph = index.graph
    # entities only hidden chunks mention: the walk must never name them
    columns = graph.entity_chunk.tocsr()
    hidden_only = set()
    for row, key in enumerate(graph.keys):
        held_by = {graph.chunk_ids[c] for c in columns.indices[columns.indptr[row] : columns.indptr[row + 1]]}
        if held_by and held_by <= hidden_chunks:
            hidden_only.add(key)
    assert hidden_only
    visible = [c.id for c in index.chunks.values() if c.doc_id not in hidden_docs]
    hop = GraphHop(graph, visible=visible, budget=budget)  # a tight budget cuts walks short, never open
    everything = GraphHop(graph)
    # the walk never even reads an edge into a hidden chunk (not just: scores them zero afterwards)
    hidden_nodes = {hop.n_entities + graph.position(c) for c in hidden_chunks}
    entered: set[int] = set()
    edges = hop._edges

    def recording(nodes):
        found = edges(nodes)
        entered.update(found[1].tolist())
        return found

    hop._edges = recording
    # a clearance's stored view carries its mask over index positions: the same walk as the id list
    view = index.chunks.visible(clearance.allows)
    by_mask = GraphHop(graph, visible=view, budget=budget)
    assert by_mask.chunk_visible is not None and by_mask.chunk_visible.sum() == len(visible)
    leaked_without_mask, cut_short = False, False
    for case in cases:
        # seed with every hidden chunk too: a seed the caller may not see is ignored
        held = {c: 1.0 for c in visible[:3]} | {c: 1.0 for c in sorted(hidden_chunks)[:3]}
        proposal = hop.propose(case.query, held, limit=5, top=50)
        same = by_mask.propose(case.query, held, limit=5, top=50)
        assert (same is None) == (proposal is None)
        if proposal is None:
            continue
        assert same.ranked == proposal.ranked and same.proposed == proposal.proposed
        assert not entered & hidden_nodes, case.case_id
        cut_short |= proposal.truncated
        assert proposal.edges <= budget
        named = {c for c, _ in proposal.ranked} | {c for c, _ in proposal.proposed} | {c for c, _ in proposal.seed_chunks}
        assert not named & hidden_chunks, case.case_id
        entities = {k for k, _ in proposal.top_entities} | {k for k, _ in proposal.seed_entities}
        assert not entities & hidden_only, case.case_id
        assert not set(proposal.parents.values()) & hidden_chunks
        unmasked = everything.propose(case.query, held, limit=5, top=50)
        leaked_without_mask |= bool(unmasked and {c for c, _ in unmasked.ranked} & hidden_chunks)
    assert leaked_without_mask  # the control: without the mask the walk does reach hidden chunks
    assert cut_short == (budget < BUDGET)  # the tight budget did cut walks short; the default, here, none
    # end to end: an engine at this clearance, graph on, leaves no hidden document in any trace
    engine = make_engine("multihop", index, clearance=level, graph=True)
    detector = LeakDetector(documents, clearance)
    traces = [engine.answer(c.query, case_id=c.case_id) for c in cases]
    assert any(s.bridge.get("graph") for t in traces for s in t.steps)
    for trace in traces:
        assert {h.doc_id for s in trace.steps for h in s.hits} <= {d.id for d in documents} - hidden_docs
        assert detector.find_in(trace.to_dict()) == set(), trace.case_id


@pytest.mark.integration
def test_ask_with_the_graph_hop_imports_no_scipy(enterprise, tmp_path) -> None:
    import subprocess
    import sys

    _, index, cases = enterprise
    boot = ("import sys\nfrom hoprag.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('scipy' in sys.modules, [m for m in ('scipy', 'bm25s') if m in sys.modules])\n")
    done = subprocess.run([sys.executable, "-c", boot, "ask", str(index.directory), cases[0].query, "--graph"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False []", done.stdout + done.stderr
