"""A loaded index keeps the chunk and document rows it has read: an update is seen by the index
object opened after it, never as a half-changed view of the one opened before."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from hoprag.index import corpus_db
from hoprag.index.store import build_index, load_index
from hoprag.index.update import update_index
from hoprag.records import Document

pytestmark = pytest.mark.unit

# HotpotQA paragraphs (the Rush question), shortened
PEART = Document(id="neil-peart", title="Neil Peart",
                 text="Neil Ellwood Peart was a Canadian musician and author, best known as the drummer of Rush.")
RUSH = Document(id="rush", title="Rush (band)", text="Rush were a Canadian rock band formed in Toronto in 1968.")
RUSH_NEW = Document(id="rush", title="Rush (band)",
                    text="Rush were a Canadian rock band formed in Willowdale, Toronto, in 1968.")


def test_an_update_is_read_by_the_index_opened_after_it(tmp_path: Path) -> None:
    out = tmp_path / "index"
    build_index(iter([PEART, RUSH]), out)
    before = load_index(out)
    assert before.chunks["rush#0"].text == RUSH.text and before.documents["rush"].text == RUSH.text
    update_index(out, [RUSH_NEW])
    after = load_index(out)
    assert after.chunks["rush#0"].text == RUSH_NEW.text and after.documents["rush"].text == RUSH_NEW.text
    # the index opened before keeps reading the file it opened, whole: its rows are the old ones
    assert before.chunks["rush#0"].text == RUSH.text and before.documents["rush"] == RUSH
    assert after.chunks["neil-peart#0"].text == PEART.text


def test_the_kept_rows_are_bounded_and_not_pickled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "index"
    build_index(iter([PEART, RUSH]), out)
    index = load_index(out)
    db = index.chunks.db
    monkeypatch.setattr(corpus_db, "ROW_CACHE", 2)
    texts = [index.chunks[c].text for c in ("neil-peart#0", "rush#0")] + [index.documents["rush"].text]
    assert texts == [PEART.text, RUSH.text, RUSH.text]
    assert len(db._cached) <= 2  # full: emptied, then the newest row kept
    assert pickle.loads(pickle.dumps(db))._cached == {}
