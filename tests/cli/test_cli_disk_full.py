"""A full disk is one message whoever meets it (Python's write, SQLite, numpy): exit 2, the fix, no traceback."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.disk_full import disk_full, disk_full_message
from hoprag.errors import InputError

pytestmark = pytest.mark.integration

ENTERPRISE = Path(__file__).resolve().parents[2] / "data" / "enterprise"
FULL = "the disk is full (no space left on device)"


def _no_space(path: object = None) -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", str(path) if path else None)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    return int(stopped.value.code), " ".join(capsys.readouterr().err.split())


def test_every_wrapping_is_found() -> None:
    sqlite_full = sqlite3.OperationalError("database or disk is full")
    assert disk_full(sqlite_full) is sqlite_full
    try:
        try:
            raise _no_space("/data/x.npy")
        except OSError:
            raise InputError("the traces file cannot be written", fix="-") from None  # the context still counts
    except InputError as wrapped:
        assert disk_full(wrapped).errno == errno.ENOSPC
    assert disk_full(OSError(getattr(errno, "EDQUOT", errno.ENOSPC), "Disk quota exceeded")) is not None
    assert disk_full(sqlite3.OperationalError("database is locked")) is None
    assert disk_full(OSError(errno.EACCES, "Permission denied")) is None
    message = disk_full_message(_no_space("/data/run/traces.jsonl"))
    assert message == (f"{FULL} while writing /data/run/traces.jsonl. Fix: free space on the disk holding /data/run "
                       "(df -h /data/run) and run the command again, or pass --out on a disk with room")


@pytest.mark.parametrize("where", ["sqlite", "numpy"])
def test_index_says_the_disk_is_full(where: str, tmp_path: Path, capsys, monkeypatch) -> None:
    if where == "sqlite":
        def full(self) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr("hoprag.index.corpus_db.CorpusWriter._flush", full)
    else:
        def full(path, *args, **kwargs) -> None:
            raise _no_space(path)

        monkeypatch.setattr("hoprag.index.bm25_arrays.np.save", full)
    code, err = _run(["index", str(ENTERPRISE / "corpus.jsonl"), "--out", str(tmp_path / "index")], capsys)
    assert code == 2, err
    assert FULL in err and "Fix: free space on the disk" in err and "pass --out on a disk with room" in err
    assert "unexpectedly" not in err and "OperationalError" not in err and "Traceback" not in err


def test_run_says_the_same(tmp_path: Path, capsys, monkeypatch) -> None:
    from hoprag.index.store import build_index
    from hoprag.ingest.loaders import load_documents

    build_index(load_documents(ENTERPRISE / "corpus.jsonl"), tmp_path / "index")

    def full(path, record) -> None:
        raise _no_space(path)

    monkeypatch.setattr("hoprag.pipeline.batch.append_trace", full)
    code, err = _run(["run", str(tmp_path / "index"), str(ENTERPRISE / "cases.jsonl"), "--out",
                      str(tmp_path / "traces.jsonl"), "-q"], capsys)
    assert code == 2, err
    assert f"{FULL} while writing {tmp_path / 'traces.jsonl'}. Fix: free space on the disk" in err
    assert "pass --out on a disk with room" in err


def test_a_command_without_out_names_no_such_flag(tmp_path: Path, capsys, monkeypatch) -> None:
    def full(*args, **kwargs) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("hoprag.store.RunStore.__init__", full)
    code, err = _run(["runs", "list", "--store", str(tmp_path / "store.db")], capsys)
    assert code == 2, err
    assert FULL in err and "--out" not in err and "pass --store on a disk with room" in err
