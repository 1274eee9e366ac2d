"""Index writes are atomic: a build killed with SIGKILL (while building, or half-way through writing)
leaves the previous index loadable; the manifest's config hash is re-checked on load."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hoprag.errors import IndexLoadError, InputError
from hoprag.index.store import build_index, load_index
from hoprag.ingest.loaders import load_documents

pytestmark = pytest.mark.integration

ENTERPRISE = Path(__file__).parents[2] / "data" / "enterprise" / "corpus.jsonl"


def _stages(target: Path) -> list[Path]:
    return sorted(p for p in target.parent.iterdir() if p.name.startswith(f".{target.name}.building-"))


def _big_corpus(path: Path, copies: int) -> Path:
    """The enterprise corpus repeated under new ids: real text, enough of it to index for a while."""
    docs = [json.loads(line) for line in ENTERPRISE.read_text(encoding="utf-8").splitlines() if line.strip()]
    with path.open("w", encoding="utf-8") as handle:
        for i in range(copies):
            for doc in docs:
                handle.write(json.dumps({**doc, "id": f"{doc['id']}~{i}"}) + "\n")
    return path


def test_a_killed_rebuild_leaves_the_old_index_and_the_next_build_cleans_up(tmp_path):
    target = tmp_path / "index"
    old = build_index(load_documents(ENTERPRISE), target)
    (target / "run.json").write_text('{"run_id": "r1"}\n')  # what a gate run stamps on an index
    corpus = _big_corpus(tmp_path / "big.jsonl", copies=60)  # 2,160 documents

    build = subprocess.Popen([sys.executable, "-m", "hoprag.cli", "index", str(corpus), "--out", str(target), "-q"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not _stages(target) and build.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert build.poll() is None, "the build ended before it could be interrupted"
        build.send_signal(signal.SIGSTOP)  # caught building
    finally:
        build.send_signal(signal.SIGKILL)
        build.wait(timeout=30)
    assert build.returncode == -signal.SIGKILL
    assert load_index(target).manifest.artifact_id == old.artifact_id and len(_stages(target)) == 1
    # and a build killed at the worst moment: half-way through writing the new index's files
    script = (
        "import os, signal, sys\n"
        "from hoprag.index.store import build_index\n"
        "from hoprag.ingest.loaders import load_documents\n"
        "def die(stage, done, total):\n"
        "    if stage == 'write' and done == 1:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "build_index(load_documents(sys.argv[1]), sys.argv[2], progress=die)\n"
    )
    writer = subprocess.run([sys.executable, "-c", script, str(corpus), str(target)], timeout=120)
    assert writer.returncode == -signal.SIGKILL

    survivor = load_index(target)
    assert survivor.manifest.artifact_id == old.artifact_id and len(survivor.documents) == old.document_count
    stale = _stages(target)  # the second build removed the first one's stage: only its own is left
    assert len(stale) == 1 and (stale[0] / "corpus.sqlite").exists()

    new = build_index(load_documents(ENTERPRISE)[:10], target)
    assert _stages(target) == [] and not any(p.exists() for p in stale)
    rebuilt = load_index(target)
    assert rebuilt.manifest.artifact_id == new.artifact_id != old.artifact_id and len(rebuilt.documents) == 10
    assert not (target / "run.json").exists()  # the stamp belonged to the replaced index
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_failed_build_keeps_the_old_index_and_leaves_no_stage(tmp_path):
    from hoprag.records import Document

    target = tmp_path / "index"
    old = build_index(load_documents(ENTERPRISE), target)
    with pytest.raises(InputError):
        build_index([Document(id="a", title="", text="x"), Document(id="a", title="", text="y")], target)

    def broken(stage: str, done: int, total: int) -> None:
        if stage == "write" and done == 1:
            raise KeyboardInterrupt  # interrupted while writing

    with pytest.raises(KeyboardInterrupt):
        build_index(load_documents(ENTERPRISE), target, progress=broken)
    assert load_index(target).manifest.artifact_id == old.artifact_id and _stages(target) == []


def test_out_that_is_a_file_or_a_foreign_directory_is_refused_untouched(tmp_path):
    docs = load_documents(ENTERPRISE)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me\n")
    with pytest.raises(InputError, match=r"notes.txt: the index output is an existing file.*--out"):
        build_index(docs, a_file)
    assert a_file.read_text() == "keep me\n"

    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "thesis.tex").write_text("keep me too\n")
    with pytest.raises(InputError, match=r"holds other files \(thesis.tex\)"):
        build_index(docs, folder)
    assert [p.name for p in folder.iterdir()] == ["thesis.tex"]

    empty = tmp_path / "empty"
    empty.mkdir()
    build_index(docs, empty)  # an empty directory is fine
    assert load_index(empty).manifest.document_count == len(docs)


def test_index_cli_on_an_existing_file_exits_2_with_the_fix(tmp_path):
    a_file = tmp_path / "index"
    a_file.write_text("")
    done = subprocess.run([sys.executable, "-m", "hoprag.cli", "index", str(ENTERPRISE), "--out", str(a_file), "-q"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is an existing file" in done.stderr and "--out" in done.stderr


def test_a_manifest_whose_config_hash_does_not_match_its_config_is_refused(tmp_path):
    target = tmp_path / "index"
    built = build_index(load_documents(ENTERPRISE), target)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["config"]["bm25"]["k1"] = 0.3  # the config changed, the hash did not
    (target / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexLoadError) as info:
        load_index(target)
    message = str(info.value)
    assert built.config_hash in message and "hoprag index" in message and "does not match" in message
    done = subprocess.run([sys.executable, "-m", "hoprag.cli", "search", str(target), "retention policy"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "does not match" in done.stderr and "Traceback" not in done.stderr
