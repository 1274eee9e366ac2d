"""A demo-like run (import, index, answer with both engines) records metrics for every stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.metrics import STAGES
from hoprag.gates.staged_run import record_demo_stages

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_every_stage_lands_in_the_store(tmp_path: Path) -> None:
    from hoprag.datasets.schema import load_cases
    from hoprag.io.traces import read_traces
    from hoprag.index.store import build_index, load_index
    from hoprag.ingest.loaders import load_documents
    from hoprag.pipeline.factory import make_engine
    from hoprag.pipeline.batch import questions_from_cases, run_questions
    from hoprag.store import RunStore

    ent = ROOT / "data" / "enterprise"
    documents = load_documents(ent / "corpus.jsonl")
    cases = load_cases(ent / "cases.jsonl")
    build_index(documents, tmp_path / "index")
    index = load_index(tmp_path / "index")
    traces = {}
    for engine in ("single", "multihop"):
        run_questions(make_engine(engine, index), questions_from_cases(cases), tmp_path / f"{engine}.jsonl",
                      run_id="demo-enterprise", resume=False)
        traces[engine] = read_traces(tmp_path / f"{engine}.jsonl")
    with RunStore(tmp_path / "hoprag.db") as store:
        counts = record_demo_stages(store, "demo-enterprise", documents, list(index.chunks.values()), index,
                                    cases, traces)
        stored = store.metrics("demo-enterprise")
        assert store.get_run("demo-enterprise").artifact_id == index.manifest.artifact_id
        assert store.get_run("demo-enterprise").status == "complete"  # recording finished, so the run did
        assert len(store.traces("demo-enterprise")) == 2 * len(cases)
    assert set(counts) == set(STAGES)
    assert {m.stage for m in stored} == set(STAGES) and len(stored) == sum(counts.values())
    names = {(m.stage, m.name) for m in stored}
    for expected in [("ingest", "pii_hits"), ("chunk", "len_chars_p95"), ("embed", "zero_norm_frac"),
                     ("index", "chunks_indexed"), ("retrieve", "multihop/nDCG@10"), ("retrieve", "single/RR"),
                     ("generate", "multihop/faithfulness"), ("feedback", "events")]:
        assert expected in names
    assert (tmp_path / "index" / "run.json").is_file()
