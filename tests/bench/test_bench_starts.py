"""Every bench in bench/ starts in the test environment and writes its figures, at a tiny size.

Only that it runs: each bench is a subprocess with its smallest arguments, which must exit 0 and
leave its figures (JSON on stdout or in a file, or the table it prints). A new bench needs a row in
RUNS; the figures themselves are measured by running the benches at their real sizes (docs/benchmarks.md).
A bench that pools the bundled samples reads the test slices instead ({data}: one slice of each
format and the enterprise set, the same loaders at a tenth of the size).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
BENCH = ROOT / "bench"
TEST_DATA = ROOT / "tests" / "data"
HOTPOT = str(TEST_DATA / "hotpotqa_dev_slice.json")


def small_data(tmp: Path) -> Path:
    """A data folder laid out as data/ (hotpotqa/, musique/, 2wikimultihopqa/, enterprise/) with the test slices."""
    out = tmp / "data"
    for folder, name in (("hotpotqa", "hotpotqa_dev_slice.json"), ("musique", "musique_dev_slice.jsonl"),
                         ("2wikimultihopqa", "2wiki_dev_slice.json")):
        (out / folder).mkdir(parents=True)
        shutil.copy(TEST_DATA / name, out / folder / name)
    shutil.copytree(ROOT / "data" / "enterprise", out / "enterprise")
    return out


def last_json(out: str, tmp: Path) -> object:
    """The JSON a bench printed (the last top-level JSON document of its stdout)."""
    start = out.rfind("\n{") + 1 if not out.lstrip().startswith("{") else out.index("{")
    return json.loads(out[start:])


def json_file(name: str) -> Callable[[str, Path], object]:
    return lambda out, tmp: json.loads((tmp / name).read_text(encoding="utf-8"))


def printed(text: str) -> Callable[[str, Path], object]:
    def check(out: str, tmp: Path) -> object:
        assert text in out, out[-2000:]
        return out

    return check


def scale_figures(out: str, tmp: Path) -> object:
    figures = json.loads((tmp / "scale.json").read_text(encoding="utf-8"))
    assert sorted(p.name for p in (tmp / "fig").glob("*.svg")) == [
        "scale_build_seconds.svg", "scale_load_seconds.svg", "scale_peak_rss.svg", "scale_query_p50.svg"]
    postgres = figures["results"][0]["postgres"]  # the Postgres store measured beside the local one
    assert postgres["bm25"]["queries"] > 0 and postgres["multihop"]["questions"] > 1
    assert "postgres BM25" in (tmp / "fig" / "scale_query_p50.svg").read_text(encoding="utf-8")
    return figures


SLOW = pytest.mark.slow
# bench file -> (arguments, how its figures are checked, marks); {tmp} is the test's folder, {data} small_data's
RUNS: dict[str, tuple[list[str], Callable[[str, Path], object], tuple]] = {
    "bm25.py": (["--quick", "--data", "{data}", "--json"], last_json, ()),
    "chain_coverage.py": (["hotpotqa", HOTPOT, "--json"], last_json, ()),
    "eval.py": (["--quick", "--json", "{tmp}/eval.json"], json_file("eval.json"), ()),
    "eval_executor.py": (["--quick", "--json", "{tmp}/executors.json"], json_file("executors.json"), (SLOW,)),
    "metrics.py": (["--queries", "200", "--hits", "20", "--repeat", "1"], printed("ratio hoprag/pytrec_eval"), ()),
    "pipeline.py": (["--quick", "--json"], last_json, ()),
    "dense.py": (["--data", "{data}", "--embedders", "static", "--limit", "32", "--queries", "5", "--threads", "1",
                  "--json"], last_json, (SLOW,)),
    "graph_hop.py": (["--only", "HotpotQA dev", "--json", "{tmp}/graph.json"], json_file("graph.json"), (SLOW,)),
    "hybrid_coverage.py": (["hotpotqa", "--n", "2", "--embedders", "static", "--json", "{tmp}/hybrid.json"],
                           json_file("hybrid.json"), (SLOW,)),
    "index_scale.py": (["--passages", "300", "--questions", "3", "--work", "{tmp}/work", "--json", "{tmp}/scale.json"],
                       json_file("scale.json"), (SLOW,)),
    "index_update.py": (["--passages", "300", "--replace", "0.02", "--delete", "0.02", "--work", "{tmp}/work",
                         "--json", "{tmp}/update.json"], json_file("update.json"), (SLOW,)),
    "otel_import.py": (["--traces", "20", "--keep", "{tmp}/otel"], printed("wrote 20 traces"), ()),
    "pg_store.py": (["--files", HOTPOT, "--embedder", "static", "--json"], last_json, (SLOW,)),
    "pooled.py": (["hotpotqa", "--n", "3", "--json", "{tmp}/pooled.json"], json_file("pooled.json"), (SLOW,)),
    "ray_executor.py": (["--cases", "4", "--latency-ms", "20", "--json", "{tmp}/ray.json"], json_file("ray.json"), (SLOW,)),
    "scale.py": (["--quick", "--postgres", "--work", "{tmp}/work", "--json", "{tmp}/scale.json", "--figures", "{tmp}/fig"],
                 scale_figures, (SLOW,)),
    "serve.py": (["--seconds", "1", "--clients", "2"], last_json, (SLOW,)),
    "question_cpu.py": (["--demo", "{data}", "--sets", "enterprise", "--passes", "1"], last_json, ()),
}


def test_every_bench_has_a_start_row() -> None:
    assert sorted(p.name for p in BENCH.glob("*.py")) == sorted(RUNS)


@pytest.mark.parametrize("name", [pytest.param(n, marks=RUNS[n][2]) for n in sorted(RUNS)])
def test_bench_starts_and_writes_its_figures(name: str, tmp_path: Path) -> None:
    args, figures, _ = RUNS[name]
    data = str(small_data(tmp_path)) if "{data}" in args else ""
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{data}", data) for a in args]
    done = subprocess.run([sys.executable, str(BENCH / name), *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert figures(done.stdout, tmp_path)


def test_chain_coverage_pools_an_extra_corpus(tmp_path: Path) -> None:
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps([{"title": "Zeta Quarry", "text": "Zeta Quarry is a disused quarry."},
                                 {"title": "Omicron Mill", "text": "Omicron Mill ground grain until 1901."}]),
                     encoding="utf-8")
    runs = {}
    for label, more in (("alone", []), ("pooled", ["--corpus", str(extra)])):
        done = subprocess.run([sys.executable, str(BENCH / "chain_coverage.py"), "hotpotqa", HOTPOT, "--json", *more],
                              cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        runs[label] = json.loads(done.stdout)
    assert runs["pooled"]["documents"] == runs["alone"]["documents"] + 2
    assert runs["pooled"]["questions"] == runs["alone"]["questions"]


@pytest.mark.slow
def test_scale_measures_postgres_alone_and_merges_it_with_a_local_run(tmp_path: Path, pg_url: str) -> None:
    """``--postgres-only`` measures just the store (on the suite's server, through ``--pg-url``: the scale.py row
    above starts an embedded one); ``--merge`` joins its rows with a local report's by size."""
    run = [sys.executable, str(BENCH / "scale.py")]
    done = subprocess.run([*run, "--quick", "--postgres-only", "--pg-url", pg_url, "--work", str(tmp_path / "work"),
                           "--json", str(tmp_path / "pg.json"), "--figures", str(tmp_path / "pgfig")],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    pg = json.loads((tmp_path / "pg.json").read_text(encoding="utf-8"))["results"][0]
    assert set(pg) == {"passages", "corpus", "postgres"} and pg["postgres"]["bm25"]["queries"] > 0
    timing = {"p50_ms": 1.0, "p95_ms": 2.0, "queries": 3}
    local = {"passages": pg["passages"], "corpus": {"chunks": 300},
             "build": {"hoprag_s": 2.0, "hoprag_peak_rss_mib": 90.0, "bm25s_s": 1.0, "bm25s_peak_rss_mib": 80.0},
             "probe": {"load_s": 0.01, "bm25s_load_s": 0.01, "bm25": timing, "bm25s": timing, "rank_bm25": None,
                       "dense": timing, "faiss_flat": timing, "hybrid": timing},
             "multihop": {"first_ms": 5.0, "p50_ms": 4.0, "p95_ms": 6.0, "peak_rss_mib": 100.0}}
    (tmp_path / "local.json").write_text(json.dumps({"results": [local]}), encoding="utf-8")
    done = subprocess.run([*run, "--merge", str(tmp_path / "local.json"), str(tmp_path / "pg.json"), "--json",
                           str(tmp_path / "all.json"), "--figures", str(tmp_path / "fig")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    merged = json.loads((tmp_path / "all.json").read_text(encoding="utf-8"))["results"]
    assert len(merged) == 1 and merged[0]["probe"] == local["probe"] and merged[0]["postgres"] == pg["postgres"]
    plot = (tmp_path / "fig" / "scale_query_p50.svg").read_text(encoding="utf-8")
    assert "postgres BM25" in plot and "hoprag BM25" in plot
    assert "postgres: build" in done.stdout and "passages" in done.stdout


def test_scale_merge_names_a_file_that_is_no_report(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text("[1, 2]", encoding="utf-8")
    for bad in (tmp_path / "missing.json", tmp_path / "notes.json", ROOT / "README.md"):
        done = subprocess.run([sys.executable, str(BENCH / "scale.py"), "--merge", str(bad), "--figures", str(tmp_path)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert f"error: {bad} is not a bench/scale.py --json report" in done.stderr
        assert "Fix: name the files that --json wrote" in done.stderr


@pytest.mark.slow
def test_index_scale_build_only_prints_both_builds_ratios(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(BENCH / "index_scale.py"), "--passages", "300", "--build-only", "--work",
                           str(tmp_path / "work"), "--json", str(tmp_path / "builds.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    (row,) = json.loads((tmp_path / "builds.json").read_text(encoding="utf-8"))["rounds"]
    assert row["hoprag_s"] > 0 and row["bm25s_s"] > 0 and row["chunks"] >= 300
    assert row["ratios"]["build_time"] == pytest.approx(row["hoprag_s"] / row["bm25s_s"])
    assert row["ratios"]["build_peak_rss"] == pytest.approx(row["hoprag_peak_rss_mib"] / row["bm25s_peak_rss_mib"])
    assert "x time (bar 1.5x)" in done.stdout and "x RSS (bar 1.2x)" in done.stdout


def test_a_measured_command_reports_its_own_peak_rss_not_the_benchs(tmp_path: Path) -> None:
    # Linux starts a forked child with its parent's peak RSS as its own ru_maxrss: a bench holding a
    # passage pool read that size for every command it forked. Here the bench process holds 300 MiB
    # and the command allocates 40 MiB: its own peak is reported, well under the bench's.
    script = (f"import json, sys; sys.path.insert(0, {str(BENCH)!r}); from index_scale import _child\n"
              "held = bytearray(300 << 20)\n"
              "held[::4096] = b'x' * len(held[::4096])\n"
              "r = _child([sys.executable, '-c', 'x = bytearray(40 << 20); x[::4096] = b\"y\" * len(x[::4096]); print(7)'])\n"
              "print(json.dumps({'rss': r['peak_rss_mib'], 'out': r['stdout'], 'cpu': r['cpu_s']}))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["out"].strip() == "7" and report["cpu"] > 0
    assert 40 <= report["rss"] < 150, report
