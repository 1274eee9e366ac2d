"""Commands import only what they use: trec-eval never loads the run store's SQLAlchemy, a search of
a local index loads no database driver, HTTP client or YAML parser (nor the pipeline's spec and LLM
settings), and a quiet index update loads neither bm25s nor numpy's masked arrays nor a plain click
nor rich's progress bars. Importing the CLI loads no numpy and tells OpenBLAS's idle threads to sleep.

Each command runs in a fresh interpreter, which prints the heavy modules it ended up importing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
HEAVY = ["sqlalchemy", "psycopg", "httpx", "yaml", "fastapi", "bm25s", "onnxruntime", "ray"]
BOOT = (
    "import os, sys, json\n"
    "from hoprag.cli import main\n"
    "try:\n"
    "    main(sys.argv[1:])\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "else:\n"
    "    code = 0\n"
    "heavy = json.loads(os.environ['HEAVY'])\n"
    "print(json.dumps({'code': code, 'loaded': [m for m in heavy if m in sys.modules]}))\n"
)


def loaded(tmp: Path, *args: str, heavy: list[str] = HEAVY) -> list[str]:
    env = {**os.environ, "HEAVY": json.dumps(heavy)}
    done = subprocess.run([sys.executable, "-c", BOOT, *args], cwd=tmp, capture_output=True, text=True, timeout=180,
                          env=env)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stdout + done.stderr
    return report["loaded"]


def test_trec_eval_does_not_import_sqlalchemy(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n", encoding="utf-8")
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d4 1 1.0 t\n", encoding="utf-8")
    assert loaded(tmp_path, "trec-eval", "qrels.txt", "run.txt", "-m", "P@5", "-m", "nDCG@10") == []


def test_search_of_a_local_index_loads_no_driver_client_or_parser(tmp_path):
    corpus = ROOT / "data" / "enterprise" / "corpus.jsonl"
    subprocess.run([sys.executable, "-m", "hoprag.cli", "index", str(corpus), "--out", "idx", "-q"], cwd=tmp_path,
                   check=True, capture_output=True, timeout=180)
    light = [*HEAVY, "hoprag.pipeline.spec", "hoprag.llm.settings"]
    assert loaded(tmp_path, "search", "idx", "retention policy for customer data", heavy=light) == []


def test_a_quiet_index_update_loads_no_bm25s_masked_arrays_click_or_progress_bars(tmp_path):
    corpus = ROOT / "data" / "enterprise" / "corpus.jsonl"
    subprocess.run([sys.executable, "-m", "hoprag.cli", "index", str(corpus), "--out", "idx", "-q"], cwd=tmp_path,
                   check=True, capture_output=True, timeout=180)
    (tmp_path / "new.jsonl").write_text(json.dumps({"id": "new-1", "title": "Tern Basic retention",
                                                    "text": "Tern Basic keeps customer data for 30 days."}) + "\n",
                                        encoding="utf-8")
    heavy = [*HEAVY, "numpy.ma", "click", "rich.progress"]
    assert loaded(tmp_path, "index", "new.jsonl", "--out", "idx", "--update", "-q", heavy=heavy) == []


@pytest.mark.parametrize(("given", "expected"), [(None, "4"), ("28", "28")])
def test_the_cli_sets_openblas_idle_threads_to_sleep_before_numpy_loads(given, expected):
    """numpy's OpenBLAS threads spin 2**28 cycles before sleeping unless told otherwise when numpy loads:
    importing the CLI must not load numpy, and must leave the setting at 2**4 (a user's own value kept)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if given is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = given
    probe = "import os, sys, hoprag.cli; print('numpy' in sys.modules, os.environ['OPENBLAS_THREAD_TIMEOUT'])"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env, check=True)
    assert done.stdout.split() == ["False", expected]
