"""Every command, given what a new user gets wrong, answers with one clear message and never a traceback.

The table below is the contract: each row is a command line and the exit codes it may end with
(2 = usage error or a refused input, 1 = a check that failed, 0 = help). A test walks the CLI's
command tree and fails when a command has no row, so a new command cannot skip this.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer.main

from hoprag.cli import app, main
from tests.cli_run import run_cli

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[2] / "data"
TEST_DATA = Path(__file__).parents[1] / "data"




@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A small real workspace: the enterprise corpus indexed, its cases, a traces file, bad files."""
    root = tmp_path_factory.mktemp("bad-inputs")
    shutil.copy(DATA / "enterprise" / "cases.jsonl", root / "cases.jsonl")
    shutil.copy(DATA / "enterprise" / "corpus.jsonl", root / "corpus.jsonl")
    (root / "latin1.jsonl").write_bytes('{"id": "d1", "text": "caf\xe9 cr\xe8me"}\n'.encode("latin-1"))
    (root / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (root / "empty.jsonl").write_bytes(b"")
    (root / "blank.jsonl").write_text("\n\n   \n", encoding="utf-8")
    (root / "adir").mkdir()
    (root / "not-json.jsonl").write_text("this is not json\n", encoding="utf-8")
    (root / "a-file").write_text("x", encoding="utf-8")
    (root / "thresholds-bad.yaml").write_text("metrics: [unclosed\n", encoding="utf-8")
    (root / "policy-bad.yaml").write_text("- just\n- a list\n", encoding="utf-8")
    (root / "qrels.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
    (root / "run.txt").write_text("q1 Q0 d1 1 1.0 t\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def built(work) -> Path:
    """An index and a traces file made through the CLI itself."""
    mp = pytest.MonkeyPatch()
    mp.chdir(work)
    mp.setenv("HOPRAG_STORE", str(work / "store.db"))
    try:
        for argv in (
            ["index", "corpus.jsonl", "--out", "index", "--quiet"],
            ["index", "corpus.jsonl", "--out", "index-nograph", "--no-graph", "--quiet"],
            ["run", "index", "cases.jsonl", "--out", "traces.jsonl", "--quiet"],
        ):
            try:
                main(argv)
            except SystemExit as exc:
                assert not exc.code, f"{argv} failed with {exc.code}"
    finally:
        mp.undo()
    return work


# (command line, allowed exit codes). Paths are relative to the workspace.
BAD_INPUTS: list[tuple[list[str], set[int]]] = [
    # the bare program, unknown commands and flags, --help
    ([], {0, 2}),
    (["no-such-command"], {2}),
    (["--no-such-flag"], {2}),
    (["ask", "--help"], {0}),
    # import
    (["import"], {2}),
    (["import", "hotpotqa"], {2}),
    (["import", "nosuchformat", "cases.jsonl", "--out", "imp"], {2}),
    (["import", "hotpotqa", "missing.json", "--out", "imp"], {2}),
    (["import", "hotpotqa", "adir", "--out", "imp"], {2}),
    (["import", "hotpotqa", "binary.bin", "--out", "imp"], {2}),
    (["import", "hotpotqa", "latin1.jsonl", "--out", "imp"], {2}),
    (["import", "musique", "empty.jsonl", "--out", "imp"], {2}),
    (["import", "2wiki", "not-json.jsonl", "--out", "imp"], {2}),
    (["import", "beir", "a-file", "--out", "imp"], {2}),
    # index
    (["index"], {2}),
    (["index", "corpus.jsonl"], {2}),
    (["index", "missing.jsonl", "--out", "ix"], {2}),
    (["index", "latin1.jsonl", "--out", "ix"], {2}),
    (["index", "binary.bin", "--out", "ix"], {2}),
    (["index", "empty.jsonl", "--out", "ix"], {2}),
    (["index", "blank.jsonl", "--out", "ix"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--chunk-size", "0"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--chunk-size", "abc"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--chunk-size", "100", "--overlap", "500"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--overlap", "-1"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--chunking", "sentences"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--chunking", ""], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--chunk-tokens", "8"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--chunk-tokens", "many"], {2}),
    (["index", "missing.jsonl", "--out", "ix", "--chunking", "fixed"], {2}),
    (["index", "corpus.jsonl", "--out", "a-file"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--embedder", "nope"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--dense", "--ann", "ivf"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--dense", "--ann", ""], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--ann", "hnsw"], {2}),
    (["index", "missing.jsonl", "--out", "ix", "--dense", "--ann", "hnsw"], {2}),
    (["index", "adir", "--out", "ix", "--dense", "--ann", "exact", "--embedder", "nope"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--graph=yes"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--no-graph", "extra-missing.jsonl"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--executor", "ray"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--workers", "2"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--dense", "--executor", "nope"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--dense", "--executor", "ray:"], {2}),
    (["index", "corpus.jsonl", "--out", "ix", "--dense", "--workers", "0"], {2}),
    (["index", "corpus.jsonl", "--store"], {2}),
    (["index", "corpus.jsonl", "--store", ""], {2}),
    (["index", "corpus.jsonl", "--store", "mysql://u:pw@127.0.0.1/db"], {2}),
    (["index", "corpus.jsonl", "--store", "adir"], {2}),
    (["index", "corpus.jsonl", "--store", "postgresql://u:pw@127.0.0.1:1/db"], {2}),
    (["index", "corpus.jsonl", "--store", "postgresql://u:pw@127.0.0.1:1/db?index=Bad-Name"], {2}),
    (["index", "corpus.jsonl", "--store", "postgresql://u:pw@127.0.0.1:1/db", "--out", "ix"], {2}),
    (["index", "missing.jsonl", "--store", "postgresql://u:pw@127.0.0.1:1/db"], {2}),
    (["index", "binary.bin", "--store", "postgresql://u:pw@127.0.0.1:1/db"], {2}),
    (["index", "corpus.jsonl", "--store"], {2}),
    (["index", "corpus.jsonl", "--store", ""], {2}),
    (["index", "corpus.jsonl", "--store", "mysql://u:pw@127.0.0.1/db"], {2}),
    (["index", "corpus.jsonl", "--store", "adir"], {2}),
    (["index", "corpus.jsonl", "--store", "postgresql://u:pw@127.0.0.1:1/db"], {2}),
    (["index", "corpus.jsonl", "--store", "postgresql://u:pw@127.0.0.1:1/db?index=Bad-Name"], {2}),
    (["index", "corpus.jsonl", "--store", "postgresql://u:pw@127.0.0.1:1/db", "--out", "ix"], {2}),
    (["index", "missing.jsonl", "--store", "postgresql://u:pw@127.0.0.1:1/db"], {2}),
    (["index", "binary.bin", "--store", "postgresql://u:pw@127.0.0.1:1/db"], {2}),
    # search
    (["search"], {2}),
    (["search", "index"], {2}),
    (["search", "index", ""], {2}),
    (["search", "index", "   "], {2}),
    (["search", "index", "retention", "-k", "0"], {2}),
    (["search", "index", "retention", "-k", "-3"], {2}),
    (["search", "index", "retention", "-k", "abc"], {2}),
    (["search", "index", "retention", "--mode", "nope"], {2}),
    (["search", "index", "retention", "--fusion", "nope"], {2}),
    (["search", "missing-index", "retention"], {2}),
    (["search", "adir", "retention"], {2}),
    (["search", "a-file", "retention"], {2}),
    (["search", "postgresql://u:pw@127.0.0.1:1/db?index=ix", "retention"], {2}),
    (["search", "postgres://u:pw@127.0.0.1:1/db?index=no/such", "retention"], {2}),
    (["search", "postgresql://u:pw@127.0.0.1:1/db?index=ix", "retention"], {2}),
    (["search", "postgres://u:pw@127.0.0.1:1/db?index=no/such", "retention"], {2}),
    # ask
    (["ask", "index"], {2}),
    (["ask", "index", ""], {2}),
    (["ask", "index", " \t "], {2}),
    (["ask", "index", "What is KP-214?", "--k", "-1"], {2}),
    (["ask", "index", "What is KP-214?", "--k", "0"], {2}),
    (["ask", "index", "What is KP-214?", "--k", "abc"], {2}),
    (["ask", "index", "What is KP-214?", "--engine", "foo"], {2}),
    (["ask", "index", "What is KP-214?", "--mode", "dense"], {2}),
    (["ask", "index", "What is KP-214?", "--llm", "nosuchbackend:x"], {2}),
    (["ask", "postgresql://u:pw@127.0.0.1:1/db?index=ix", "What is KP-214?"], {2}),
    (["ask", "postgresql://u:pw@127.0.0.1:1/db?index=ix", "What is KP-214?"], {2}),
    (["ask", "missing-index", "What is KP-214?"], {2}),
    (["ask", "index-nograph", "What is KP-214?", "--graph"], {2}),
    (["ask", "index", "What is KP-214?", "--engine", "single", "--graph"], {2}),
    (["ask", "index", "What is KP-214?", "--graph=no"], {2}),
    # run
    (["run", "index"], {2}),
    (["run", "index", "cases.jsonl"], {2}),
    (["run", "postgresql://u:pw@127.0.0.1:1/db?index=ix", "cases.jsonl", "--out", "t.jsonl"], {2}),
    (["run", "postgresql://u:pw@127.0.0.1:1/db?index=ix", "cases.jsonl", "--out", "t.jsonl"], {2}),
    (["run", "index", "missing.jsonl", "--out", "t.jsonl"], {2}),
    (["run", "index", "binary.bin", "--out", "t.jsonl"], {2}),
    (["run", "index", "latin1.jsonl", "--out", "t.jsonl"], {2}),
    (["run", "index", "adir", "--out", "t.jsonl"], {2}),
    (["run", "index", "empty.jsonl", "--out", "t.jsonl"], {2}),
    (["run", "index", "cases.jsonl", "--out", "t.jsonl", "--k", "0"], {2}),
    (["run", "index", "cases.jsonl", "--out", "t.jsonl", "--engine", "foo"], {2}),
    (["run", "index", "cases.jsonl", "--out", "adir"], {2}),
    (["run", "index", "cases.jsonl", "--out", "cases.jsonl"], {2}),
    (["run", "index", "cases.jsonl", "--out", "cases.jsonl", "--no-resume"], {2}),
    (["run", "index", "cases.jsonl", "--out", "binary.bin"], {2}),
    (["run", "index", "cases.jsonl", "--out", "corpus.jsonl"], {2}),
    (["run", "index", "cases.jsonl", "--out", "traces.jsonl", "--engine", "single"], {2}),
    (["run", "index-nograph", "cases.jsonl", "--out", "t-graph.jsonl", "--graph"], {2}),
    (["run", "index", "cases.jsonl", "--out", "t-single.jsonl", "--engine", "single", "--graph"], {2}),
    (["run", "index", "cases.jsonl", "--out", "traces.jsonl", "--no-graph"], {2}),
    (["run", "index", "cases.jsonl", "--out", "t-exec.jsonl", "--executor"], {2}),
    (["run", "index", "cases.jsonl", "--out", "t-exec.jsonl", "--executor", "threads"], {2}),
    (["run", "index", "cases.jsonl", "--out", "t-exec.jsonl", "--executor", "local:4"], {2}),
    (["run", "index", "cases.jsonl", "--out", "t-exec.jsonl", "--executor", "ray:"], {2}),
    (["run", "index", "cases.jsonl", "--out", "t-exec.jsonl", "--executor", "ray:nohost"], {2}),
    (["run", "index", "cases.jsonl", "--out", "t-exec.jsonl", "--executor", "ray:127.0.0.1:9"], {2}),
    (["run", "index", "cases.jsonl", "--out", "t-exec.jsonl", "--workers", "0"], {2}),
    (["run", "index", "cases.jsonl", "--out", "t-exec.jsonl", "--workers", "abc"], {2}),
    # eval and chain-eval
    (["eval", "cases.jsonl"], {2}),
    (["eval", "cases.jsonl", "missing.jsonl"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--k", "0"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--k", "abc"], {2}),
    (["eval", "cases.jsonl", "binary.bin"], {2}),
    (["eval", "cases.jsonl", "latin1.jsonl"], {2}),
    (["eval", "cases.jsonl", "adir"], {2}),
    (["eval", "binary.bin", "traces.jsonl"], {2}),
    (["eval", "not-json.jsonl", "traces.jsonl"], {2}),
    (["eval", "cases.jsonl", "cases.jsonl"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--judge-calibration"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--judge-calibration", "missing.json"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--judge-calibration", "adir"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--judge-calibration", "binary.bin"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--judge-calibration", "latin1.jsonl"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--judge-calibration", "not-json.jsonl"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--judge-calibration", "corpus.jsonl"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--judge-calibration", "empty.jsonl"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--executor", "nope"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--executor", "ray:"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--executor", "ray:nohost"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--executor", "ray:127.0.0.1:9"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--workers", "0"], {2}),
    (["eval", "cases.jsonl", "cases.jsonl"], {2}),
    (["eval", "cases.jsonl", "traces.jsonl", "--k", "-2"], {2}),
    (["eval", "cases.jsonl", "binary.bin"], {2}),
    (["eval", "cases.jsonl", "adir"], {2}),
    # audit, split, leakage, synth
    (["cases", "audit", "cases.jsonl"], {2}),
    (["cases", "audit", "latin1.jsonl", "corpus.jsonl"], {2}),
    (["cases", "audit", "cases.jsonl", "binary.bin"], {2}),
    (["cases", "audit", "cases.jsonl", "adir"], {2}),
    (["cases", "split", "cases.jsonl", "--out", "sp", "--ratios", "a,b"], {2}),
    (["cases", "split", "cases.jsonl", "--out", "sp", "--by", "nosuchkey"], {2}),
    (["cases", "split", "binary.bin", "--out", "sp"], {2}),
    (["cases", "leakage"], {2}),
    (["cases", "leakage", "missing.jsonl", "cases.jsonl"], {2}),
    (["cases", "leakage", "cases.jsonl", "cases.jsonl", "--threshold", "7"], {2}),
    (["cases", "synth", "missing.jsonl", "--out", "s.jsonl"], {2}),
    (["cases", "synth", "corpus.jsonl", "--out", "s.jsonl", "--max", "0"], {2}),
    (["cases", "synth", "binary.bin", "--out", "s.jsonl"], {2}),
    # ablate, compare, release, export-trec
    (["ablate", "index", "cases.jsonl"], {2}),
    (["ablate", "index", "cases.jsonl", "--out", "ab", "--executor", "nope"], {2}),
    (["ablate", "index", "cases.jsonl", "--out", "ab", "--executor", "ray:"], {2}),
    (["ablate", "index", "cases.jsonl", "--out", "ab", "--executor", "ray:127.0.0.1:9"], {2}),
    (["ablate", "index", "cases.jsonl", "--out", "ab", "--workers", "0"], {2}),
    (["ablate", "missing-index", "cases.jsonl", "--out", "ab"], {2}),
    (["ablate", "index", "cases.jsonl", "--out", "ab", "--k", "0"], {2}),
    (["ablate", "index", "binary.bin", "--out", "ab"], {2}),
    (["ablate", "index", "cases.jsonl", "--out", "ab", "--oracle-mode", "sideways"], {2}),
    (["compare", "traces.jsonl"], {2}),
    (["compare", "traces.jsonl", "missing.jsonl", "--cases", "cases.jsonl"], {2}),
    (["compare", "traces.jsonl", "traces.jsonl", "--cases", "cases.jsonl", "--resamples", "0"], {2}),
    (["compare", "traces.jsonl", "traces.jsonl", "--cases", "cases.jsonl", "--cluster", "nope"], {2}),
    (["compare", "binary.bin", "traces.jsonl", "--cases", "cases.jsonl"], {2}),
    (["release", "cases.jsonl", "traces.jsonl"], {2}),
    (["release", "cases.jsonl", "traces.jsonl", "--policy", "missing.yaml"], {2}),
    (["release", "cases.jsonl", "traces.jsonl", "--policy", "policy-bad.yaml"], {2}),
    (["release", "cases.jsonl", "traces.jsonl", "--policy", "binary.bin"], {2}),
    # judge calibration
    (["judge"], {0, 2}),
    (["judge", "calibrate"], {2}),
    (["judge", "calibrate", "missing.jsonl"], {2}),
    (["judge", "calibrate", "adir"], {2}),
    (["judge", "calibrate", "binary.bin"], {2}),
    (["judge", "calibrate", "latin1.jsonl"], {2}),
    (["judge", "calibrate", "empty.jsonl"], {2}),
    (["judge", "calibrate", "corpus.jsonl"], {2}),
    (["judge", "calibrate", "cases.jsonl", "missing.jsonl"], {2}),
    (["judge", "calibrate", "cases.jsonl", "not-json.jsonl"], {2}),
    (["judge", "calibrate", "cases.jsonl", "blank.jsonl"], {2}),
    (["judge", "calibrate", "cases.jsonl", "corpus.jsonl"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--llm", "openai:some-model"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--out", "adir"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--resamples", "0"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--llm", "llamacpp:model.gguf"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--llm", "nonsense"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--base-url", "http://127.0.0.1:9/v1"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--llm-timeout", "5"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--llm", "openai:m", "--base-url", "not-a-url"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--llm", "openai:m", "--base-url", "http://127.0.0.1:9/v1"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--llm", "openai:m", "--llm-timeout", "0"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--llm", "openai:m", "--llm-retries", "-1"], {2}),
    (["judge", "calibrate", "cases.jsonl", "--llm", "openai:m", "--llm-budget", "-1"], {2}),
    (["judge", "calibrate", "missing.jsonl", "--llm", "openai:m", "--base-url", "http://127.0.0.1:9/v1"], {2}),
    (["trec", "export", "cases.jsonl", "traces.jsonl", "--qrels", "q.txt"], {2}),
    (["trec", "export", "cases.jsonl", "binary.bin", "--qrels", "q.txt", "--run", "r.txt"], {2}),
    (["trec", "export", "cases.jsonl", "traces.jsonl", "--qrels", "adir", "--run", "r.txt"], {2}),
    (["trec", "export", "cases.jsonl", "traces.jsonl", "--qrels", "q.txt", "--run", "r.txt", "--source", "x"], {2}),
    # judgment pools
    (["cases", "pool", "index", "cases.jsonl"], {2}),
    (["cases", "pool", "missing-index", "cases.jsonl", "--out", "pl"], {2}),
    (["cases", "pool", "index", "binary.bin", "--out", "pl"], {2}),
    (["cases", "pool", "index", "cases.jsonl", "--out", "pl", "--depth", "0"], {2}),
    (["cases", "pool", "index", "cases.jsonl", "--out", "a-file"], {2}),
    (["cases", "pool", "index", "cases.jsonl", "--out", "pl", "--clearance", "top-secret"], {2}),
    (["cases", "judgments", "adir", "cases.jsonl"], {2}),
    (["cases", "judgments", "adir", "cases.jsonl", "--out", "q.txt"], {2}),
    (["cases", "judgments", "missing-pool", "cases.jsonl", "--out", "q.txt"], {2}),
    (["cases", "judgments", "index", "cases.jsonl", "--out", "q.txt", "--conflict", "vote"], {2}),
    (["cases", "judgments", "index", "cases.jsonl", "--out", "q.txt", "--cases-out", "adir"], {2}),
    (["cases", "judgments", "index", "cases.jsonl", "--out", "q.txt", "--cases", "cases.jsonl"], {2}),
    (["cases", "judgments", "index", "cases.jsonl", "--out", "q.txt", "--cases-out", "f.jsonl", "--cases", "binary.bin"], {2}),
    (["cases", "judgments", "index", "cases.jsonl", "--out", "q.txt", "--cases-out", "f.jsonl", "--cases", "missing.jsonl"], {2}),
    (["cases", "judgments", "index", "cases.jsonl", "--out", "q.txt", "--cases-out", "f.jsonl", "--cases", "corpus.jsonl"], {2}),
    # redact
    (["traces", "redact", "traces.jsonl"], {2}),
    (["traces", "redact", "missing.jsonl", "--out", "r.jsonl"], {2}),
    (["traces", "redact", "binary.bin", "--out", "r.jsonl"], {2}),
    (["traces", "redact", "cases.jsonl", "--out", "r.jsonl"], {2}),
    (["traces", "redact", "traces.jsonl", "--out", "adir"], {2}),
    (["traces", "redact", "traces.jsonl", "--out", "r.jsonl", "--pattern", "X=("], {2}),
    (["traces", "redact", "traces.jsonl", "--out", "r.jsonl", "--patterns", "binary.bin"], {2}),
    # gates
    (["gate", "run", "corpus.jsonl"], {2}),
    (["gate", "run", "corpus.jsonl", "--cases", "cases.jsonl", "--out", "gr", "--engine", "foo"], {2}),
    (["gate", "run", "missing.jsonl", "--cases", "cases.jsonl", "--out", "gr"], {2}),
    (["gate", "run", "latin1.jsonl", "--cases", "cases.jsonl", "--out", "gr"], {2}),
    (["gate", "run", "corpus.jsonl", "--cases", "binary.bin", "--out", "gr"], {2}),
    (["gate", "run", "corpus.jsonl", "--cases", "cases.jsonl", "--out", "gr", "--embedder", "nope"], {2}),
    (["gate", "baseline"], {2}),
    (["gate", "baseline", "--run", "no-such-run"], {2}),
    (["gate", "check"], {2}),
    (["gate", "check", "--run", "no-such-run"], {2}),
    (["gate", "check", "--run", "no-such-run", "--thresholds", "thresholds-bad.yaml"], {2}),
    (["gate", "check", "--run", "no-such-run", "--thresholds", "binary.bin"], {2}),
    (["gate", "diff", "no-such-run"], {2}),
    (["gate", "diff", "no-such-run", "other-run"], {2}),
    (["trec", "eval", "qrels.txt"], {2}),
    (["trec", "eval", "missing.txt", "run.txt"], {2}),
    (["trec", "eval", "binary.bin", "run.txt"], {2}),
    (["trec", "eval", "qrels.txt", "run.txt", "-m", "NoSuchMeasure"], {2}),
    (["trec", "eval", "latin1.jsonl", "run.txt"], {2}),
    (["feedback"], {0, 2}),
    (["feedback", "import"], {2}),
    (["feedback", "import", "missing.jsonl"], {2}),
    (["feedback", "import", "binary.bin"], {2}),
    (["feedback", "import", "latin1.jsonl"], {2}),
    (["feedback", "import", "not-json.jsonl"], {2}),
    (["feedback", "import", "adir"], {2}),
    (["feedback", "import", "empty.jsonl", "--window", "forever"], {2}),
    (["traces"], {0, 2}),
    (["traces", "import"], {2}),
    (["traces", "import", "missing.jsonl", "--out", "otel-traces.jsonl"], {2}),
    (["traces", "import", "binary.bin", "--out", "otel-traces.jsonl"], {2}),
    (["traces", "import", "latin1.jsonl", "--out", "otel-traces.jsonl"], {2}),
    (["traces", "import", "adir", "--out", "otel-traces.jsonl"], {2}),
    (["traces", "import", "empty.jsonl", "--out", "otel-traces.jsonl"], {2}),
    (["traces", "import", "not-json.jsonl", "--out", "otel-traces.jsonl"], {2}),
    (["traces", "import", "cases.jsonl", "--out", "otel-traces.jsonl"], {2}),
    (["traces", "import", "corpus.jsonl"], {2}),
    # runs
    (["runs"], {0, 2}),
    (["runs", "list", "--status", "bogus"], {2}),
    (["runs", "list", "--store", "adir"], {2}),
    (["runs", "list", "--store", "postgresql://u:pw@127.0.0.1:1/db"], {2}),
    (["runs", "rm"], {2}),
    (["runs", "rm", "no-such-run"], {2}),
    (["runs", "rm", "--failed", "--store", "nosuchdb://x/y"], {2}),
    # serve (each row must be refused before the server binds: see the guard in the test)
    (["serve"], {2}),
    (["serve", "missing-index"], {2}),
    (["serve", "a-file"], {2}),
    (["serve", "postgresql://u:pw@127.0.0.1:1/db?index=ix"], {2}),
    (["serve", "postgresql://u:pw@127.0.0.1:1/db?index=ix"], {2}),
    (["serve", "index", "--host", "0.0.0.0"], {2}),
    (["serve", "index", "--port", "0"], {2}),
    (["serve", "index", "--port", "abc"], {2}),
    (["serve", "index", "--tokens", "missing.yaml"], {2}),
    (["serve", "index", "--tokens", "binary.bin"], {2}),
    (["serve", "index", "--tokens", "policy-bad.yaml"], {2}),
    (["serve", "index", "--clearance", "top-secret"], {2}),
    (["serve", "index", "--workers", "0"], {2}),
    (["serve", "index", "--synth-only"], {2}),
    (["serve", "index", "--mcp", "smoke"], {2}),
    (["serve", "index", "--mcp", ""], {2}),
    (["serve", "index", "--mcp", "stdio", "--tokens", "policy-bad.yaml"], {2}),
    (["serve", "index", "--allow-host", ""], {2}),
    (["serve", "index", "--allow-host", "*"], {2}),
    # demo
    (["demo", "--data", "missing-data", "--out", "dm"], {2}),
    (["demo", "--data", "a-file", "--out", "dm"], {2}),
    (["demo", "--data", "adir", "--out", "dm", "--embedder", "nope"], {2}),
    # the last release's names still run, saying the new spelling
    (["audit", "cases.jsonl"], {2}),
    (["gate", "--run", "no-such-run"], {2}),
    (["export-trec", "cases.jsonl", "traces.jsonl", "--qrels", "q.txt"], {2}),
    (["import-traces", "otel", "missing.jsonl", "--out", "otel-traces.jsonl"], {2}),
]

@pytest.mark.parametrize(("argv", "codes"), BAD_INPUTS, ids=[" ".join(a) or "<none>" for a, _ in BAD_INPUTS])
def test_bad_input_gets_a_clear_message_and_no_traceback(argv, codes, built, capsys, monkeypatch):
    monkeypatch.chdir(built)
    monkeypatch.setenv("HOPRAG_STORE", str(built / "store.db"))
    monkeypatch.delenv("HOPRAG_DEBUG", raising=False)
    try:  # a row that wrongly starts the service must fail, not serve forever
        import uvicorn

        def refuse_to_serve(*args, **kwargs):
            raise SystemExit(99)

        monkeypatch.setattr(uvicorn, "run", refuse_to_serve)
    except ImportError:
        pass
    code, output = run_cli(argv, capsys)
    assert "Traceback" not in output, output
    assert code in codes, f"exit {code} for {argv}: {output}"
    if code == 2:
        assert output.strip(), f"{argv} exited 2 without saying why"
        assert "failed unexpectedly" not in output, output


def _command_paths() -> list[str]:
    root = typer.main.get_command(app)
    paths: list[str] = []

    def walk(command, prefix: list[str]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for name, sub in subcommands.items():
                if not sub.hidden:  # the last release's names, kept for one release, run the same commands
                    walk(sub, [*prefix, name])
        elif prefix:
            paths.append(" ".join(prefix))

    walk(root, [])
    return sorted(paths)


def test_every_command_has_rows_in_the_bad_input_table():
    covered = {" ".join(argv[:2]) for argv, _ in BAD_INPUTS} | {argv[0] for argv, _ in BAD_INPUTS if argv}
    missing = [p for p in _command_paths() if p not in covered]
    assert not missing, f"commands without a bad-input row: {missing}"


@pytest.mark.parametrize("path", _command_paths())
def test_every_command_refuses_an_unknown_flag_and_shows_help(path, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, output = run_cli([*path.split(), "--definitely-not-a-flag"], capsys)
    assert code == 2 and "Traceback" not in output
    assert "--definitely-not-a-flag" in output
    code, output = run_cli([*path.split(), "--help"], capsys)
    assert code == 0 and "Usage" in output


def test_an_unexpected_error_is_one_line_naming_the_command_and_debug(monkeypatch, capsys, tmp_path):
    import hoprag.index.store as store

    def boom(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(store, "load_index", boom)
    monkeypatch.delenv("HOPRAG_DEBUG", raising=False)
    code, output = run_cli(["search", "anything", "a query"], capsys)
    assert code == 1
    assert "Traceback" not in output
    assert "hoprag search" in output and "--debug" in output and "HOPRAG_DEBUG=1" in output
    with pytest.raises(ZeroDivisionError):
        main(["--debug", "search", "anything", "a query"])
    monkeypatch.setenv("HOPRAG_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["search", "anything", "a query"])


def test_usage_errors_print_the_usage_line_and_exit_2(capsys):
    code, output = run_cli(["search"], capsys)
    assert code == 2
    assert "Usage: hoprag search" in output and "Missing argument" in output
    code, output = run_cli(["search", "ix", "q", "-k", "abc"], capsys)
    assert code == 2 and "Invalid value for '-k'" in output
    code, output = run_cli(["search", "ix", "q", "-k", "0"], capsys)
    assert code == 2 and "-k" in output


def test_a_hopragerror_prints_its_fix_and_exits_2(capsys, built, monkeypatch):
    monkeypatch.chdir(built)
    code, output = run_cli(["index", "corpus.jsonl", "--out", "ix", "--chunk-size", "100", "--overlap", "500"], capsys)
    assert code == 2
    assert output.startswith("error:") and "--overlap (500)" in output and "--chunk-size (100)" in output


def test_the_traces_written_by_the_fixture_are_real(built):
    lines = [json.loads(line) for line in (built / "traces.jsonl").read_text(encoding="utf-8").splitlines() if line]
    assert sum(1 for obj in lines if "case_id" in obj) == 16
