"""Ray as the executor, on a real local Ray (``ray.init(num_cpus=2)``, one instance for the module:
tests/ray/conftest.py, with the indexed samples).

Every result must be the local executor's: the same traces (ids, hits, answers) for ``run`` and
``ablate`` on the bundled samples, written in the cases' order and resumable; the same vector bytes
for the dense embedding.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hoprag.cli import main
from hoprag.errors import ConfigError
from hoprag.evaluation.ablations import AblationRecipe, run_ablations
from hoprag.io.traces import read_traces
from hoprag.executors import RayExecutor
from hoprag.index.embed_shards import embed_corpus
from hoprag.index.store import load_index
from hoprag.ingest.loaders import load_corpora
from hoprag.pipeline.engine_recipe import EngineRecipe
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.batch import questions_from_cases, run_questions
from hoprag.pipeline.spec import EngineSpec

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"


def comparable(traces) -> list[tuple]:
    """What must not depend on the executor: ids, every step's hits and selection, evidence, answer."""
    return [
        (t.case_id, t.run_id, t.engine, t.config_hash, t.stop_reason,
         [(s.hop, s.sub_query, [(h.chunk_id, h.rank, round(h.score, 9)) for h in s.hits], s.selected) for s in t.steps],
         [e.hit.chunk_id for e in t.evidence], t.answer.text, t.answer.claims, t.answer.abstained)
        for t in traces
    ]


def _recipe(index_dir: Path, engine) -> EngineRecipe:
    return EngineRecipe.over(index_dir, spec=EngineSpec(), config_hash=engine.config_hash,
                             artifact_id=load_index(index_dir).manifest.artifact_id)


@pytest.mark.parametrize("sample", ["enterprise", "hotpot"])
def test_ray_run_writes_the_local_runs_traces_in_order(sample, request, tmp_path):
    index_dir, cases = request.getfixturevalue(sample)
    engine = make_engine("multihop", load_index(index_dir))
    questions = questions_from_cases(cases)
    run_questions(engine, questions, tmp_path / "local.jsonl", run_id="r1")
    summary = run_questions(engine, questions, tmp_path / "ray.jsonl", run_id="r1",
                            executor=RayExecutor(workers=2), setup=_recipe(index_dir, engine))
    assert summary.written == len(cases) and summary.errors == 0
    local, remote = read_traces(tmp_path / "local.jsonl"), read_traces(tmp_path / "ray.jsonl")
    assert [t.case_id for t in remote] == [c.case_id for c in cases]
    assert comparable(remote) == comparable(local)


def test_ray_run_resumes_where_a_local_run_stopped(enterprise, tmp_path):
    index_dir, cases = enterprise
    engine = make_engine("multihop", load_index(index_dir))
    questions = questions_from_cases(cases)
    out = tmp_path / "traces.jsonl"
    run_questions(engine, questions[:5], out, run_id="r2")
    summary = run_questions(engine, questions, out, executor=RayExecutor(workers=2), setup=_recipe(index_dir, engine))
    assert (summary.resumed, summary.written, summary.run_id) == (5, len(cases) - 5, "r2")
    run_questions(engine, questions, tmp_path / "whole.jsonl", run_id="r2")
    assert comparable(read_traces(out)) == comparable(read_traces(tmp_path / "whole.jsonl"))
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert header["run_id"] == "r2" and "case_id" not in header


def test_a_worker_that_sees_another_index_refuses(enterprise, hotpot, tmp_path):
    index_dir, cases = enterprise
    engine = make_engine("multihop", load_index(index_dir))
    wrong = EngineRecipe.over(hotpot[0], spec=EngineSpec(), artifact_id=load_index(index_dir).manifest.artifact_id)
    with pytest.raises(ConfigError, match="every node must see the same index"):
        run_questions(engine, questions_from_cases(cases), tmp_path / "t.jsonl", executor=RayExecutor(workers=1),
                      setup=wrong)
    assert len((tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()) == 1  # the header only


def test_ray_ablations_match_the_local_ones(enterprise, tmp_path):
    index_dir, cases = enterprise
    cases = cases[:6]
    local = run_ablations(load_index(index_dir), cases, tmp_path / "local")
    remote = run_ablations(load_index(index_dir), cases, tmp_path / "ray", executor=RayExecutor(workers=2),
                           setup=AblationRecipe(str(index_dir)))
    for path in sorted((tmp_path / "local").glob("traces-*.jsonl")):
        assert comparable(read_traces(tmp_path / "ray" / path.name)) == comparable(read_traces(path)), path.name
    strip = [{k: v for k, v in r["metrics"].items() if not k.startswith("latency")} for r in local.rows]
    assert [{k: v for k, v in r["metrics"].items() if not k.startswith("latency")} for r in remote.rows] == strip
    assert remote.oracle_check["oracle_unseeded"] == local.oracle_check["oracle_unseeded"]


def test_ray_embedding_shards_give_the_same_vector_bytes():
    pytest.importorskip("onnxruntime")
    texts = [d.text for d in load_corpora([ENTERPRISE / "corpus.jsonl"])][:7]
    # batches of 2 cut the 7 texts into shards of whole batches (the last one short) on two workers
    here, _ = embed_corpus("minilm", texts, batch=2)
    there, embedder = embed_corpus("minilm", texts, batch=2, executor=RayExecutor(workers=2))
    assert there.dtype == np.float32 and there.shape == (7, embedder.dim)
    assert there.tobytes() == here.tobytes()


def test_cli_run_with_the_ray_executor(enterprise, tmp_path, capsys):
    index_dir, _ = enterprise
    base = ["run", str(index_dir), str(ENTERPRISE / "cases.jsonl"), "-q"]
    for name, extra in (("local", []), ("ray", ["--executor", "ray", "--workers", "2"])):
        try:
            main(base + ["--out", str(tmp_path / f"{name}.jsonl"), *extra])
        except SystemExit as exc:
            assert exc.code in (0, None), capsys.readouterr()
    # each run has its own run id; everything else is the same
    without_id = [lambda rows: [row[:1] + row[2:] for row in rows]][0]
    assert without_id(comparable(read_traces(tmp_path / "ray.jsonl"))) == without_id(
        comparable(read_traces(tmp_path / "local.jsonl")))


def test_cli_index_dense_with_the_ray_executor_writes_the_same_vectors(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    lines = (ENTERPRISE / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:5]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name, extra in (("local", []), ("ray", ["--executor", "ray", "--workers", "2"])):
        try:
            main(["index", str(corpus), "--out", str(tmp_path / name), "--dense", "--embedder", "minilm", "-q", *extra])
        except SystemExit as exc:
            assert exc.code in (0, None), capsys.readouterr()
    assert (tmp_path / "ray" / "vectors.npy").read_bytes() == (tmp_path / "local" / "vectors.npy").read_bytes()
