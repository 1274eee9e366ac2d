"""The CLI end to end, as a user runs it: a real process per command, on real slices."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[1] / "data"


def hoprag(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hoprag.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    done = hoprag("import", "hotpotqa", str(DATA / "hotpotqa_dev_slice.json"), "--out", "hp", cwd=root)
    assert done.returncode == 0, done.stderr
    done = hoprag("index", "hp/corpus.jsonl", "--out", "hp/index", "--quiet", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def test_import_writes_cases_and_a_deduplicated_corpus_and_prints_counts(work):
    cases = (work / "hp" / "cases.jsonl").read_text().splitlines()
    corpus = [json.loads(line) for line in (work / "hp" / "corpus.jsonl").read_text().splitlines()]
    assert len(cases) == 5
    assert len({(d["title"], d["text"]) for d in corpus}) == len(corpus)


def test_index_writes_a_manifest(work):
    manifest = json.loads((work / "hp" / "index" / "manifest.json").read_text())
    for field in ("config", "config_hash", "document_count", "chunk_count", "created_at", "artifact_id"):
        assert field in manifest
    assert manifest["document_count"] == len((work / "hp" / "corpus.jsonl").read_text().splitlines())


def test_index_folds_accents_unless_told_not_to(work):
    assert json.loads((work / "hp" / "index" / "manifest.json").read_text())["config"]["fold_accents"] is True
    done = hoprag("index", "hp/corpus.jsonl", "--out", "hp/unfolded", "--no-fold-accents", "--quiet", cwd=work)
    assert done.returncode == 0, done.stderr
    assert json.loads((work / "hp" / "unfolded" / "manifest.json").read_text())["config"]["fold_accents"] is False
    done = hoprag("search", "hp/unfolded", "Neil Peart drummer of Rush", "-k", "1", "--json", cwd=work)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["title"] == "Neil Peart"


def test_search_json_is_ranked(work):
    done = hoprag("search", "hp/index", "Neil Peart drummer of Rush", "-k", "3", "--json", cwd=work)
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert [h["rank"] for h in hits] == [1, 2, 3]
    assert hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"]
    assert hits[0]["title"] == "Neil Peart"


def test_ask_shows_answer_trail_and_citations(work):
    done = hoprag("ask", "hp/index", "Are Sutera and Rhodotypos both types of shrub?", cwd=work)
    assert done.returncode == 0, done.stderr
    for heading in ("answer", "evidence trail", "evidence handed to the answerer", "reasoning chain"):
        assert heading in done.stdout
    as_json = json.loads(hoprag("ask", "hp/index", "Are Sutera and Rhodotypos both types of shrub?", "--json", cwd=work).stdout)
    assert as_json["steps"][0]["hop"] == 1 and as_json["stop_reason"]


def test_run_then_eval_gives_the_documented_json(work):
    for engine in ("single", "multihop"):
        done = hoprag("run", "hp/index", "hp/cases.jsonl", "--out", f"hp/{engine}.jsonl", "--engine", engine, "-q", cwd=work)
        assert done.returncode == 0, done.stderr
        done = hoprag("eval", "hp/cases.jsonl", f"hp/{engine}.jsonl", "--k", "2", "5", "10", "--json", f"hp/{engine}.json", cwd=work)
        assert done.returncode == 0, done.stderr
    report = json.loads((work / "hp" / "multihop.json").read_text())
    for name in ("chain_coverage@2", "chain_coverage@5", "chain_coverage@10", "hop1_recall@5", "answer_em", "answer_f1", "latency_ms_p50"):
        assert name in report["aggregate"]
    assert len(report["cases"]) == 5 and all("case_id" in row for row in report["cases"])
    single = json.loads((work / "hp" / "single.json").read_text())
    assert report["aggregate"]["chain_coverage@2"] > single["aggregate"]["chain_coverage@2"]


def test_run_resumes_a_half_written_trace_file(work):
    lines = (work / "hp" / "single.jsonl").read_text().splitlines()  # the run header, then one trace a line
    (work / "hp" / "partial.jsonl").write_text("\n".join(lines[:3]) + "\n")
    done = hoprag("run", "hp/index", "hp/cases.jsonl", "--out", "hp/partial.jsonl", "--engine", "single", "-q", cwd=work)
    assert done.returncode == 0, done.stderr
    assert "2 already done" in done.stdout
    assert len((work / "hp" / "partial.jsonl").read_text().splitlines()) == 1 + 5


def test_eval_scores_a_missing_case_as_zero_not_dropped(work):
    lines = (work / "hp" / "multihop.jsonl").read_text().splitlines()
    (work / "hp" / "short.jsonl").write_text(lines[1] + "\n")  # one trace, without the run header
    done = hoprag("eval", "hp/cases.jsonl", "hp/short.jsonl", "--json", "hp/short.json", cwd=work)
    assert done.returncode == 0, done.stderr
    report = json.loads((work / "hp" / "short.json").read_text())
    assert report["aggregate"]["missing_traces"] == 4 and len(report["cases"]) == 5


@pytest.mark.parametrize(
    "args, needle",
    [
        (("import", "trivia", "x.json", "--out", "o"), "unknown dataset format 'trivia'"),
        (("index", "missing.jsonl", "--out", "o"), "missing.jsonl"),
        (("search", "no-such-index", "q"), "run `hoprag index"),
        (("eval", "hp/cases.jsonl", "nope.jsonl"), "nope.jsonl"),
        (("run", "hp/index", "hp/cases.jsonl", "--out", "t.jsonl", "--engine", "magic"), "unknown engine 'magic'"),
    ],
)
def test_bad_input_gets_a_clear_error(work, args, needle):
    done = hoprag(*args, cwd=work)
    assert done.returncode != 0
    assert needle in (done.stderr + done.stdout).replace("\n", " ")


def test_malformed_and_empty_inputs(work):
    (work / "bad.jsonl").write_text('{"id": "a", "text": "fine"}\n{"id": "b", "text": \n')
    done = hoprag("index", "bad.jsonl", "--out", "o", cwd=work)
    assert done.returncode == 2 and "bad.jsonl:2" in done.stderr.replace("\n", " ")
    (work / "empty.jsonl").write_text("")
    done = hoprag("index", "empty.jsonl", "--out", "o", cwd=work)
    assert done.returncode == 2 and "empty" in done.stderr.lower()
    (work / "nofield.jsonl").write_text('{"case_id": "c1"}\n')
    done = hoprag("eval", "nofield.jsonl", "hp/single.jsonl", cwd=work)
    assert done.returncode == 2 and "nofield.jsonl:1" in done.stderr.replace("\n", " ") and "query" in done.stderr


def test_compare_finds_the_cases_beside_the_runs(work):
    done = hoprag("compare", "hp/single.jsonl", "hp/multihop.jsonl", "--resamples", "200", cwd=work)
    assert done.returncode == 0, done.stderr
    assert "chain_coverage@10" in done.stdout and "95% CI" in done.stdout
    (work / "elsewhere").mkdir(exist_ok=True)
    (work / "elsewhere" / "a.jsonl").write_text((work / "hp" / "single.jsonl").read_text())
    missing = hoprag("compare", "elsewhere/a.jsonl", "hp/multihop.jsonl", cwd=work)
    assert missing.returncode == 2 and "--cases" in missing.stderr
