"""The short cuts of an index update give what the long way gives: it scores with bm25s's own scoring
functions read without importing bm25s (and scipy) — scores and recorded parameters equal the build's
path, which imports bm25s, and an index scored by another bm25s version or backend imports it — and
reads the kept documents' title keys from the key index instead of every row."""

from __future__ import annotations

import numpy as np
import pytest

from hoprag.index.bm25 import BM25Params
from hoprag.index.bm25_build import score_entries
from hoprag.index.bm25_delta import bm25s_scoring

pytestmark = pytest.mark.unit

# 3 chunks (lengths 4, 2, 6) over 3 terms; entries (row, col, tf)
ROWS = np.array([0, 2, 0, 1, 2, 2])
COLS = np.array([0, 0, 1, 1, 1, 2])
TFS = np.array([1, 2, 3, 1, 1, 4], dtype=np.uint16)
LENGTHS = np.array([4, 2, 6])
DF = np.array([2, 3, 1])


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_scores_and_parameters_equal_the_imported_path(method: str) -> None:
    bm25 = {**BM25Params().model_dump(), "method": method}
    data, nonoccurrence, params = score_entries(ROWS, COLS, TFS, LENGTHS, DF, 3, bm25)
    api = bm25s_scoring(params, bm25)
    assert api is not None
    again, nonoccurrence_again, params_again = score_entries(ROWS, COLS, TFS, LENGTHS, DF, 3, bm25, bm25s_api=api)
    assert again.dtype == data.dtype and np.array_equal(again, data)
    assert params_again == params
    assert (nonoccurrence is None) == (method == "lucene")
    if nonoccurrence is not None:
        assert np.array_equal(nonoccurrence_again, nonoccurrence)
    # lucene by hand for the first entry: idf = ln(1 + (N - df + 0.5) / (df + 0.5)), avgdl 4
    if method == "lucene":
        k1, b = bm25["k1"], bm25["b"]
        idf = np.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
        assert data[0] == pytest.approx(idf * 1 / (k1 * (1 - b + b * 4 / 4) + 1), rel=1e-6)


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_scores_read_from_the_tf_table_equal_the_entry_by_entry_arithmetic(method: str, monkeypatch) -> None:
    """Every (tf, length) pair from 1 to 40 and 0 to 300 over 97 terms, in several slices: the table
    path's float32 scores are the per-entry loop's bit for bit (the loop forced by a table cap of 0)."""
    import hoprag.index.bm25_build as bm25_build

    monkeypatch.setattr(bm25_build, "_SLICE", 1000)
    lengths = np.arange(301, dtype=np.int64)
    tf_grid, row_grid = np.meshgrid(np.arange(1, 41, dtype=np.uint16), np.arange(301), indexing="ij")
    cols = np.arange(tf_grid.size) % 97
    order = np.argsort(cols, kind="stable")
    rows, tfs, cols = row_grid.ravel()[order], tf_grid.ravel()[order], cols[order]
    df = np.bincount(cols, minlength=97)
    bm25 = {**BM25Params().model_dump(), "method": method}
    by_table, nonoccurrence, _ = score_entries(rows, cols, tfs, lengths, df, lengths.size, bm25)
    monkeypatch.setattr(bm25_build, "_TABLE_MAX", 0)
    by_entry, nonoccurrence_again, _ = score_entries(rows, cols, tfs, lengths, df, lengths.size, bm25)
    assert by_table.dtype == by_entry.dtype == np.float32
    assert by_table.tobytes() == by_entry.tobytes()
    assert (nonoccurrence is None) == (method not in ("bm25l", "bm25+"))


def test_an_index_scored_by_another_version_or_with_other_parameters_imports_bm25s() -> None:
    bm25 = BM25Params().model_dump()
    _, _, params = score_entries(ROWS, COLS, TFS, LENGTHS, DF, 3, bm25)
    assert bm25s_scoring({**params, "version": "0.0.1"}, bm25) is None
    assert bm25s_scoring({**params, "backend": "numba"}, bm25) is None
    assert bm25s_scoring(params, {**bm25, "k1": bm25["k1"] + 0.1}) is None


def test_the_title_keys_an_update_carries_over_are_those_of_the_kept_documents(tmp_path) -> None:
    """Two documents share a title: removing one keeps its key, removing both drops it."""
    from hoprag.index.store import build_index, load_index
    from hoprag.index.entities import title_key
    from hoprag.records import Document

    docs = [Document(id="a", text="Kestrel Dynamics sells aerial sensors.", title="Project Orion"),
            Document(id="b", text="The pilot ran for ninety days.", title="Project Orion (2024)"),
            Document(id="c", text="Tern Basic is a plan.", title="Tern Basic")]
    build_index(docs, tmp_path / "ix")
    db = load_index(tmp_path / "ix").chunks.db
    orion, tern = title_key("Project Orion"), title_key("Tern Basic")
    assert orion == title_key("Project Orion (2024)")  # the parenthetical is not part of the key
    assert db.title_keys(np.array([True, True, True])) == {orion, tern}
    assert db.title_keys(np.array([False, True, True])) == {orion, tern}
    assert db.title_keys(np.array([False, False, True])) == {tern}
    assert db.title_keys(np.array([True, True, False])) == {orion}


@pytest.mark.parametrize("kept", ["1" * 80, "1" * 40 + "0" + "1" * 39, "10" * 40, "0" * 80, "0" * 79 + "1"])
def test_the_corpus_hash_of_the_kept_rows_is_the_hash_a_build_of_them_computes(tmp_path, kept) -> None:
    """The update hashes the kept records as SQLite concatenates them in runs (or row by row when
    they are scattered, as the third and last cases are): the value equals :func:`corpus_hash` over the kept documents, then the new."""
    from hoprag.index.corpus_db import canonical_record
    from hoprag.index.manifest import corpus_hash
    from hoprag.index.store import build_index
    from hoprag.index.update import _corpus_hash
    from hoprag.records import Document

    docs = [Document(id=f"d{i}", text=f"Kestrel Dynamics report {i}: the pilot ran {i} days.", title=f"Report {i}")
            for i in range(80)]
    new = Document(id="n", text="Tern Basic is a plan, café included.", title="Tern Basic")
    manifest = build_index(docs, tmp_path / "ix")
    keep = np.array([c == "1" for c in kept])
    expected = corpus_hash([d for d, k in zip(docs, keep) if k] + [new])
    assert _corpus_hash(tmp_path / "ix", manifest, keep, [canonical_record(new)]).hexdigest() == expected
    (tmp_path / "ix" / "analysis" / "corpus_digest.json").unlink(missing_ok=True)  # the records digested again
    assert _corpus_hash(tmp_path / "ix", manifest, keep, [canonical_record(new)]).hexdigest() == expected


def test_an_update_that_only_adds_resumes_the_saved_digest_and_saves_what_a_build_saves(tmp_path, monkeypatch) -> None:
    """The saved SHA-256 state finishes to the manifest's hash; after an add it is resumed (a state
    that does not finish to the manifest's hash is not) and the stage gets the file a rebuild writes."""
    import json

    from hoprag.index import corpus_digest
    from hoprag.index.corpus_db import canonical_record
    from hoprag.index.manifest import corpus_hash
    from hoprag.index.store import build_index
    from hoprag.index.update import update_index
    from hoprag.records import Document

    if corpus_digest._library() is None:
        pytest.skip("no libcrypto with SHA256_* here: the digest is hashlib's and nothing is resumed")
    docs = [Document(id=f"d{i}", text=f"Kestrel Dynamics report {i}: the pilot ran {i} days.", title=f"Report {i}")
            for i in range(30)]
    new = Document(id="n", text="Tern Basic is a plan, café included.", title="Tern Basic")
    manifest = build_index(docs, tmp_path / "ix")
    saved = json.loads((tmp_path / "ix" / "analysis" / corpus_digest.DIGEST_FILE).read_text(encoding="utf-8"))
    assert saved["documents"] == 30 and saved["corpus_hash"] == manifest.corpus_hash == corpus_hash(docs)
    resumed = corpus_digest.resume_digest(tmp_path / "ix", 30, manifest.corpus_hash)
    assert resumed is not None
    resumed.add(canonical_record(new))
    assert resumed.hexdigest() == corpus_hash([*docs, new])
    assert corpus_digest.resume_digest(tmp_path / "ix", 29, manifest.corpus_hash) is None
    assert corpus_digest.resume_digest(tmp_path / "ix", 30, corpus_hash(docs[:29])) is None
    # the same records fed in other pieces leave the same saved state (the block buffer's unused tail zeroed)
    one, two = corpus_digest.CorpusDigest(), corpus_digest.CorpusDigest()
    for doc in docs:
        one.add(canonical_record(doc))
    two.update("".join(canonical_record(d) + "\n" for d in docs[:7]).encode("utf-8"), 7)
    for doc in docs[7:]:
        two.add(canonical_record(doc))
    assert one.state() == two.state() and one.hexdigest() == two.hexdigest() == manifest.corpus_hash
    from hoprag.index import update

    def reread(*args: object) -> None:
        raise AssertionError("the kept records were read again")

    monkeypatch.setattr(update, "_digest_kept", reread)
    update_index(tmp_path / "ix", [new])
    rebuilt = build_index([*docs, new], tmp_path / "again")
    name = f"analysis/{corpus_digest.DIGEST_FILE}"
    assert (tmp_path / "ix" / name).read_bytes() == (tmp_path / "again" / name).read_bytes()
    assert json.loads((tmp_path / "ix" / "manifest.json").read_text())["corpus_hash"] == rebuilt.corpus_hash


def test_without_libcrypto_the_digest_is_hashlibs_and_nothing_is_saved_or_resumed(tmp_path, monkeypatch) -> None:
    """Where no libcrypto with SHA256_* loads, the build and the update hash with hashlib (the same
    value), write no state file, and the update digests the kept records again."""
    from hoprag.index import corpus_digest
    from hoprag.index.manifest import corpus_hash
    from hoprag.index.store import build_index
    from hoprag.index.update import update_index
    from hoprag.records import Document

    monkeypatch.setattr(corpus_digest, "_LIB", None)
    monkeypatch.setattr(corpus_digest, "_LOADED", True)
    docs = [Document(id=f"d{i}", text=f"Tern Basic plan note {i}: data kept {i} days.", title=f"Note {i}")
            for i in range(12)]
    new = Document(id="n", text="Kestrel Dynamics sells aerial sensors.", title="Kestrel Dynamics")
    manifest = build_index(docs, tmp_path / "ix")
    assert manifest.corpus_hash == corpus_hash(docs)
    assert not (tmp_path / "ix" / "analysis" / corpus_digest.DIGEST_FILE).exists()
    assert corpus_digest.resume_digest(tmp_path / "ix", 12, manifest.corpus_hash) is None
    assert update_index(tmp_path / "ix", [new]).manifest.corpus_hash == corpus_hash([*docs, new])
