"""One evaluation core: one qrels rule, one measure registry, one computation.

The retrieve gate, ``hoprag eval -m`` and ``hoprag trec eval`` on ``hoprag trec export``'s files give
the same document-level numbers on the same traces (made through the CLI on the bundled enterprise
set), and those equal pytrec_eval's and ir_measures' on the same files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.datasets.schema import Case, Distractor, Fact
from hoprag.errors import ConfigError
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.evaluation.chain_scoring import chain_measures, named_measure
from hoprag.evaluation.measures.registry import REGISTRY, parse_measure
from hoprag.evaluation.qrels import case_qrels, qrels_from_cases, run_from_traces
from hoprag.records import Evidence, Hit, Trace

ROOT = Path(__file__).resolve().parents[2]
KS = (5, 10)
NAMES = [f"{f}@{k}" for k in KS for f in ("P", "R", "nDCG", "Success")] + ["RR", "AP"]
PYTREC = {"P": "P", "R": "recall", "nDCG": "ndcg_cut", "Success": "success"}


def _case(case_id: str, **kw: object) -> Case:
    return Case(case_id=case_id, query="q?", **kw)


def _trace(case_id: str, docs: list[str]) -> Trace:
    evidence = tuple(Evidence(Hit(f"{d}#0", d, 1.0, i, "t"), "", "", 1, "s1", "") for i, d in enumerate(docs, 1))
    return Trace("r", case_id, "q?", evidence=evidence)


CHAINS = _case(
    "c1",
    facts={"a": Fact(source_id="doc-a", grade=1), "b": Fact(source_id="doc-b", grade=2),
           "c": Fact(source_id="doc-c", grade=2), "m": Fact(source_id="missing:doc-m", grade=2),
           "x": Fact(source_id="doc-x", grade=2)},
    valid_chains=[["a", "b"], ["c", "m"]],  # x is on no chain
    distractors=[Distractor(source_id="doc-d"), Distractor(source_id="doc-a")],
)
NOTHING_RELEVANT = _case("c2", facts={"m": Fact(source_id="missing:doc-m")}, valid_chains=[["m"]],
                         distractors=[Distractor(source_id="doc-d")])


@pytest.mark.unit
def test_the_qrels_rule() -> None:
    # both chains judged (the alternative too), graded max(1, grade); the missing source and the
    # fact on no chain are not judged; a distractor is 0 unless it is a chain fact's source
    assert case_qrels(CHAINS) == {"doc-a": 1, "doc-b": 2, "doc-c": 2, "doc-d": 0}
    # nothing relevant: no query at all (trec_eval would score it 0 whatever was retrieved)
    assert case_qrels(NOTHING_RELEVANT) == {}
    assert list(qrels_from_cases([CHAINS, NOTHING_RELEVANT])) == ["c1"]


@pytest.mark.unit
def test_eval_scores_a_case_as_one_trec_query() -> None:
    traces = [_trace("c1", ["doc-x", "doc-b", "doc-b", "doc-a"]), _trace("c2", ["doc-d"])]
    report = evaluate_chains([CHAINS, NOTHING_RELEVANT], traces, ks=(2,), extra_measures=["P@2", "R@2", "RR", "AP"])
    c1, c2 = report.cases
    # c1 ranks doc-x (unjudged), doc-b (2), doc-a (1); relevant: a, b, c
    assert (c1["P@2"], c1["R@2"], c1["RR"]) == (pytest.approx(1 / 2), pytest.approx(1 / 3), pytest.approx(1 / 2))
    assert c1["AP"] == pytest.approx((1 / 2 + 2 / 3) / 3)
    assert c2["P@2"] is None and report.aggregate["na_P@2"] == 1  # N/A, as absent from the qrels
    assert report.aggregate["P@2"] == pytest.approx(1 / 2)
    missing = evaluate_chains([CHAINS], [], ks=(2,), extra_measures=["RR"])
    assert missing.cases[0]["RR"] == 0.0  # a missing trace gets the registered default (trec_eval -c)


@pytest.mark.unit
def test_every_measure_eval_scores_is_registered_with_its_default() -> None:
    for measure in chain_measures((3,)):
        found = REGISTRY[measure.name]
        assert found.default == measure.default, measure.name
        assert (measure.k is not None) == (found.cutoff == "required"), measure.name
    assert str(named_measure("chain_coverage@7")) == "chain_coverage@7"
    assert str(named_measure("coverage@3")) == "Success@3"
    with pytest.raises(ConfigError, match="valid: chain_coverage@k"):
        parse_measure("Foo@3")
    with pytest.raises(ConfigError, match="oracle"):
        named_measure("cond_hop2_recall@5")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index, a traces file, an evaluation and a TREC export made through the CLI itself."""
    work = tmp_path_factory.mktemp("one-core")
    for name in ("cases.jsonl", "corpus.jsonl"):
        shutil.copy(ROOT / "data" / "enterprise" / name, work / name)
    mp = pytest.MonkeyPatch()
    mp.chdir(work)
    mp.setenv("HOPRAG_STORE", str(work / "store.db"))
    measures = [arg for name in NAMES for arg in ("-m", name)]
    try:
        for argv in (
            ["index", "corpus.jsonl", "--out", "index", "--quiet"],
            ["run", "index", "cases.jsonl", "--out", "traces.jsonl", "--quiet"],
            ["eval", "cases.jsonl", "traces.jsonl", "--k", "5", "--k", "10", *measures, "--json", "eval.json"],
            ["trec", "export", "cases.jsonl", "traces.jsonl", "--qrels", "qrels.txt", "--run", "run.txt"],
        ):
            try:
                main(argv)
            except SystemExit as exc:
                assert not exc.code, f"{argv} failed with {exc.code}"
    finally:
        mp.undo()
    return work


def _gate_metrics(work: Path) -> dict[str, float]:
    from hoprag.datasets.schema import load_cases
    from hoprag.io.traces import read_traces
    from hoprag.gates.staged_run import record_demo_stages
    from hoprag.index.store import load_index
    from hoprag.ingest.loaders import load_documents
    from hoprag.store import RunStore

    documents = load_documents(work / "corpus.jsonl")
    index = load_index(work / "index")
    with RunStore(work / "gate.db") as store:
        record_demo_stages(store, "one-core", documents, list(index.chunks.values()), index,
                           load_cases(work / "cases.jsonl"), {"multihop": read_traces(work / "traces.jsonl")}, ks=KS)
        return {m.name.removeprefix("multihop/"): m.value for m in store.metrics("one-core", "retrieve")}


@pytest.mark.integration
def test_gate_eval_and_trec_eval_agree(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    main(["trec", "eval", str(built / "qrels.txt"), str(built / "run.txt"), *[a for n in NAMES for a in ("-m", n)],
          "--include-missing", "--json"])
    trec = json.loads(capsys.readouterr().out)
    evaluated = json.loads((built / "eval.json").read_text(encoding="utf-8"))["aggregate"]
    gate = _gate_metrics(built)
    assert gate["queries"] == trec["queries"] == evaluated["cases"] - evaluated.get("na_RR", 0) == 16
    for name in NAMES:
        assert gate[name] == pytest.approx(trec["aggregate"][name], abs=1e-12), name
        assert evaluated[name] == pytest.approx(trec["aggregate"][name], abs=1e-12), name
    assert 0.0 < trec["aggregate"]["nDCG@5"] < 1.0  # a real ranking, not a degenerate one


@pytest.mark.integration
def test_the_exported_files_score_the_same_in_pytrec_eval_and_ir_measures(built: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ir_measures = pytest.importorskip("ir_measures")
    from hoprag.trec import read_qrels, read_run

    evaluated = json.loads((built / "eval.json").read_text(encoding="utf-8"))
    qrels, run = read_qrels(built / "qrels.txt"), read_run(built / "run.txt")
    wanted = {f"{PYTREC[f]}.{k}" for f in PYTREC for k in KS} | {"recip_rank", "map"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, wanted).evaluate(run)
    rows = {row["case_id"]: row for row in evaluated["cases"]}
    assert set(ref) == set(qrels) == {c for c, row in rows.items() if row["RR"] is not None}
    for qid, values in ref.items():
        for family, trec_name in PYTREC.items():
            for k in KS:
                assert rows[qid][f"{family}@{k}"] == pytest.approx(values[f"{trec_name}_{k}"], abs=1e-12)
        assert rows[qid]["RR"] == pytest.approx(values["recip_rank"], abs=1e-12)
        assert rows[qid]["AP"] == pytest.approx(values["map"], abs=1e-12)
    theirs = ir_measures.calc_aggregate([ir_measures.parse_measure(n) for n in NAMES],
                                        ir_measures.read_trec_qrels(str(built / "qrels.txt")),
                                        ir_measures.read_trec_run(str(built / "run.txt")))
    for name in NAMES:
        assert evaluated["aggregate"][name] == pytest.approx(theirs[ir_measures.parse_measure(name)], abs=1e-12)


@pytest.mark.unit
def test_the_run_is_the_last_trace_of_each_case() -> None:
    run = run_from_traces([_trace("c1", ["doc-a"]), _trace("c1", ["doc-b", "doc-a", "doc-b"])])
    assert run == {"c1": {"doc-b": 2, "doc-a": 1}}


SRC = ROOT / "src" / "hoprag"
# entry point -> the core names it must take from the evaluation core (and not compute itself)
ENTRY_POINTS = {
    "demo.py": {"hoprag.evaluation.chain_eval": "evaluate_chains"},
    "commands/evaluation.py": {"hoprag.evaluation.chain_eval": "evaluate_chains",
                               "hoprag.evaluation.qrels": "qrels_from_cases"},
    "commands/gates.py": {"hoprag.evaluation.measures.documents": "retrieval_measures"},
    "gates/staged_run.py": {"hoprag.evaluation.qrels": "qrels_from_cases"},
    "gates/checks/retrieval.py": {"hoprag.evaluation.measures.documents": "retrieval_measures"},
    "service/views.py": {"hoprag.evaluation.chain_eval": "evaluate_chains"},
}


def _imports(path: Path) -> set[tuple[str, str]]:
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {(node.module or "", alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            for alias in node.names}


@pytest.mark.unit
@pytest.mark.parametrize("module", sorted(ENTRY_POINTS))
def test_entry_points_score_through_the_core(module: str) -> None:
    found = _imports(SRC / module)
    for core, name in ENTRY_POINTS[module].items():
        assert (core, name) in found, f"{module} does not take {name} from {core}"
    assert ("hoprag.evaluation.runner", "evaluate") not in found, f"{module} scores around evaluate_chains"


@pytest.mark.unit
def test_one_home_for_qrels_measures_and_trec_files() -> None:
    import ast

    homes = {"qrels_from_cases": "evaluation/qrels.py", "case_qrels": "evaluation/qrels.py",
             "run_from_traces": "evaluation/qrels.py", "retrieval_measures": "evaluation/measures/documents.py",
             "measure_values": "evaluation/measures/documents.py", "parse_measure": "evaluation/measures/registry.py",
             "read_qrels": "trec.py", "read_run": "trec.py", "write_qrels": "trec.py", "write_run": "trec.py",
             "evaluate_chains": "evaluation/chain_eval.py", "aggregate_rows": "evaluation/aggregates.py"}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in homes:
                assert path.relative_to(SRC).as_posix() == homes[node.name], f"{path}: a second {node.name}"
