from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
BUNDLED = ROOT / "data"


@pytest.fixture(scope="session")
def real_trec_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    """A real qrels/run pair over >= 1,000 queries built from the bundled benchmark samples.

    Queries: every case question (qrels: :mod:`hoprag.evaluation.qrels`, its chain facts' documents,
    grade 2 answer-bearing / 1 bridge, distractors 0) and every labelled fact span (qrels: its own document 2, the case's other fact
    documents 1). Run: hoprag's BM25 index over the set's pooled corpus, top 100 documents.
    """
    from hoprag.datasets.importers import import_dataset
    from hoprag.evaluation.qrels import qrels_from_cases
    from hoprag.trec import write_qrels, write_run
    from hoprag.index.store import build_index, load_index

    out = tmp_path_factory.mktemp("trec")
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    sets = (("hotpotqa", "hotpotqa", "*.json"), ("musique", "musique", "*.jsonl"), ("2wiki", "2wikimultihopqa", "*.json"))
    for fmt, folder, pattern in sets:
        result = import_dataset(fmt, sorted((BUNDLED / folder).glob(pattern)))
        build_index(result.documents, out / fmt)
        retriever = load_index(out / fmt).retriever()
        queries: dict[str, str] = {}
        for case in result.cases:
            judged = qrels_from_cases([case]).get(case.case_id)
            if judged:
                qid = f"{fmt}:{case.case_id}"
                qrels[qid], queries[qid] = judged, case.query
            for fact_id, fact in case.facts.items():
                text = " ".join(s.text for s in fact.spans).strip()
                if not text:
                    continue
                qid = f"{fmt}:{case.case_id}:{fact_id}"
                others = {f.source_id: 1 for f in case.facts.values()}
                qrels[qid] = {**others, fact.source_id: 2}
                queries[qid] = text
        for qid, text in queries.items():
            docs: dict[str, float] = {}
            for hit in retriever.retrieve(text, 100):
                docs.setdefault(hit.doc_id, round(float(hit.score), 4))  # rounding makes real ties
            run[qid] = docs
    write_qrels(out / "qrels.txt", qrels)
    write_run(out / "run.txt", run)
    return out / "qrels.txt", out / "run.txt", len(run)
