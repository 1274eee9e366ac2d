"""The core commands work with every optional extra missing, and a missing extra is a clear error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[1] / "data"
# scipy is core (the entity graph every default index builds), so it is not among them
EXTRAS = [
    "sqlalchemy", "onnxruntime", "model2vec", "tokenizers", "httpx", "llama_cpp", "sacrebleu",
    "rouge_score", "datasketch", "yaml", "psycopg", "faiss", "usearch", "pytrec_eval", "ir_measures", "ray",
]
BOOT = (
    "import sys\n"
    f"for name in {EXTRAS!r}:\n"
    "    sys.modules[name] = None  # importing it now raises ImportError, as if not installed\n"
    "from hoprag.cli import main\n"
    "sys.argv = ['hoprag'] + sys.argv[1:]\n"
    "main()\n"
)


def hoprag(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BOOT, *args], cwd=tmp, capture_output=True, text=True, timeout=120)


def test_core_commands_without_any_extra(tmp_path):
    steps = [
        ("import", "hotpotqa", str(DATA / "hotpotqa_dev_slice.json"), "--out", "hp"),
        ("index", "hp/corpus.jsonl", "--out", "hp/idx", "-q"),
        ("run", "hp/idx", "hp/cases.jsonl", "--out", "hp/t.jsonl", "-q"),
        ("eval", "hp/cases.jsonl", "hp/t.jsonl", "--json", "hp/e.json", "--html", "hp/r.html"),
    ]
    for args in steps:
        done = hoprag(tmp_path, *args)
        assert done.returncode == 0, (args, done.stderr)
    assert json.loads((tmp_path / "hp" / "e.json").read_text())["aggregate"]["cases"] == 5
    assert (tmp_path / "hp" / "r.html").read_text().lower().startswith("<!doctype html>")


def test_a_missing_extra_names_what_to_install(tmp_path):
    assert hoprag(tmp_path, "import", "hotpotqa", str(DATA / "hotpotqa_dev_slice.json"), "--out", "hp").returncode == 0
    assert hoprag(tmp_path, "index", "hp/corpus.jsonl", "--out", "hp/idx", "-q").returncode == 0
    dense = hoprag(tmp_path, "index", "hp/corpus.jsonl", "--out", "hp/dense", "--dense", "-q")
    assert dense.returncode == 2 and "hoprag[dense]" in dense.stderr.replace("\n", " ")
    llm = hoprag(tmp_path, "ask", "hp/idx", "Who drums for Rush?", "--llm", "openai:some-model")
    assert llm.returncode == 2 and "hoprag[llm]" in llm.stderr.replace("\n", " ")
    ray = hoprag(tmp_path, "run", "hp/idx", "hp/cases.jsonl", "--out", "hp/t.jsonl", "--executor", "ray")
    assert ray.returncode == 2 and "hoprag[ray]" in ray.stderr.replace("\n", " ")
    ray_eval = hoprag(tmp_path, "eval", "hp/cases.jsonl", "hp/cases.jsonl", "--executor", "ray", "--workers", "2")
    assert ray_eval.returncode == 2 and "hoprag[ray]" in ray_eval.stderr.replace("\n", " ")
    assert "Traceback" not in ray_eval.stderr


@pytest.mark.parametrize(("command", "extra"), [("run", "hoprag[ray]"), ("ablate", "hoprag[ray]"), ("eval", "hoprag[ray]"),
                                                ("index", "hoprag[ray]"), ("demo", "hoprag[dense]")])
def test_the_help_names_the_extra_whole(command, extra):
    """rich reads '[ray]' as markup and drops it unless escaped: the help must still name the extra."""
    from typer.testing import CliRunner

    from hoprag.cli import app

    output = CliRunner().invoke(app, [command, "--help"], terminal_width=200).output
    assert extra in " ".join(output.replace("│", " ").split())
