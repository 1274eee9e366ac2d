"""The file-opening helper: each way a user-given path can be wrong has its own message and fix."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

import pytest

from hoprag.errors import InputError
from hoprag.files import check_dir, check_file, open_text, read_text

pytestmark = pytest.mark.unit
DATA = Path(__file__).resolve().parents[1] / "data"


def _stream(path: Path, what: str = "cases file", **kw: bool) -> list[str]:
    with open_text(path, what, **kw) as lines:
        return list(lines)


def _read(path: Path, what: str = "cases file", **kw: bool) -> str:
    return read_text(path, what, **kw)


READERS = [pytest.param(_read, id="read_text"), pytest.param(_stream, id="open_text")]


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("read", READERS)
def test_a_real_fixture_reads_the_same_either_way(read) -> None:
    path = DATA / "ingest_docs.jsonl"
    text = path.read_text(encoding="utf-8")
    got = read(path, "corpus file")
    assert (got if isinstance(got, str) else "".join(got)) == text


@pytest.mark.parametrize("read", READERS)
def test_a_utf8_bom_is_dropped_and_crlf_kept(tmp_path: Path, read) -> None:
    path = _write(tmp_path, "c.jsonl", codecs.BOM_UTF8 + b'{"a": 1}\r\n{"b": "\xc3\xa9"}\r\n')
    got = read(path)
    assert (got if isinstance(got, str) else "".join(got)) == '{"a": 1}\r\n{"b": "é"}\r\n'


@pytest.mark.parametrize("read", READERS)
def test_missing_file_suggests_a_close_name(tmp_path: Path, read) -> None:
    (tmp_path / "cases.jsonl").write_text("{}\n")
    with pytest.raises(InputError, match=r"cases\.jsnol: cases file not found\. Fix: check the path "
                                         r"\(did you mean .*cases\.jsonl\?\)"):
        read(tmp_path / "cases.jsnol")


def test_missing_folder_and_a_file_used_as_a_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cases file not found: its folder .*nowhere does not exist either"):
        read_text(tmp_path / "nowhere" / "cases.jsonl", "cases file")
    plain = _write(tmp_path, "cases.jsonl", b"{}\n")
    with pytest.raises(InputError, match=r"cases file not found: .*cases\.jsonl is a file, so nothing can be inside"):
        read_text(plain / "more.jsonl", "cases file")


@pytest.mark.parametrize("read", READERS)
def test_a_directory_where_a_file_is_expected_lists_its_files(tmp_path: Path, read) -> None:
    (tmp_path / "cases.jsonl").write_text("{}\n")
    (tmp_path / "corpus.jsonl").write_text("{}\n")
    with pytest.raises(InputError, match=r"cases file is a directory, not a file\. Fix: pass one of the files "
                                         r"inside it \(cases\.jsonl, corpus\.jsonl\), not the folder"):
        read(tmp_path)


def test_check_dir_refuses_a_file_and_a_missing_path(tmp_path: Path) -> None:
    plain = _write(tmp_path, "manifest.json", b"{}")
    assert check_dir(tmp_path, "index directory") == tmp_path
    with pytest.raises(InputError, match=r"index directory is a file, not a directory\. Fix: pass the directory"):
        check_dir(plain, "index directory")
    with pytest.raises(InputError, match="index directory not found"):
        check_dir(tmp_path / "idx", "index directory")
    assert check_file(plain, "manifest") == plain


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
@pytest.mark.parametrize("read", READERS)
def test_unreadable_file(tmp_path: Path, read) -> None:
    path = _write(tmp_path, "cases.jsonl", b"{}\n")
    path.chmod(0)
    try:
        with pytest.raises(InputError, match=r"cases file cannot be read \(permission denied\)\. Fix: .*chmod u\+r"):
            read(path)
    finally:
        path.chmod(0o600)


# "Café" in latin-1 on line 2: line 1 is 9 bytes, then `"Caf`, so the é (0xE9) is at offset 13.
LATIN1 = b'{"a": 1}\n"Caf\xe9"\n'


@pytest.mark.parametrize("read", READERS)
def test_latin1_names_offset_line_and_the_conversion(tmp_path: Path, read) -> None:
    path = _write(tmp_path, "c.jsonl", LATIN1)
    with pytest.raises(InputError) as info:
        read(path)
    message = str(info.value)
    assert "cases file is not UTF-8 text (byte 0xE9 at byte offset 13, line 2)" in message
    assert "looks like latin-1/cp1252; convert it: iconv -f cp1252 -t utf-8" in message
    assert message.endswith(str(tmp_path / "c.utf8.jsonl"))


@pytest.mark.parametrize("read", READERS)
def test_cp1252_smart_quotes_are_named_as_cp1252(tmp_path: Path, read) -> None:
    path = _write(tmp_path, "c.txt", b"he said \x93yes\x94\n")
    with pytest.raises(InputError, match=r"byte 0x93 at byte offset 8, line 1\)\. Fix: it looks like cp1252"):
        read(path)


@pytest.mark.parametrize("read", READERS)
def test_mixed_encodings_and_truncated_utf8(tmp_path: Path, read) -> None:
    mixed = _write(tmp_path, "m.txt", "Zürich ".encode() + b"M\xfcnchen\n")
    with pytest.raises(InputError, match=r"byte 0xFC at byte offset 9, line 1\)\. Fix: it mixes encodings"):
        read(mixed)
    cut = _write(tmp_path, "t.txt", "Zürich ".encode() + "€".encode()[:2])
    with pytest.raises(InputError, match=r"ends in the middle of a UTF-8 character .*offset 8, line 1.*truncated"):
        read(cut)
    # Without UTF-8 before it, a lead byte at the very end is more likely latin-1 ("café") than a cut.
    latin = _write(tmp_path, "l.txt", "café".encode("latin-1"))
    with pytest.raises(InputError, match=r"offset 3, line 1; or the file was cut short inside a character\)\. "
                                         r"Fix: it looks like latin-1/cp1252"):
        read(latin)


@pytest.mark.parametrize("read", READERS)
@pytest.mark.parametrize(("codec", "name"), [("utf-16", "UTF-16LE"), ("utf-16-be", None), ("utf-32", "UTF-32LE")])
def test_utf16_and_utf32(tmp_path: Path, read, codec: str, name: str | None) -> None:
    data = '{"q": "é"}\n'.encode(codec)
    if codec == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
        name = "UTF-16BE"
    path = _write(tmp_path, "c.jsonl", data)
    with pytest.raises(InputError, match=rf"cases file is {name} text \(it starts with a {name} byte-order mark\)"
                                         rf".*iconv -f utf-{name[4:6]} -t utf-8"):
        read(path)


@pytest.mark.parametrize("read", READERS)
def test_utf16_without_bom_and_binary(tmp_path: Path, read) -> None:
    path = _write(tmp_path, "c.jsonl", '{"q": 1}\n'.encode("utf-16-le"))
    with pytest.raises(InputError, match=r"looks like UTF-16LE text without a byte-order mark.*iconv -f utf-16le"):
        read(path)
    gz = _write(tmp_path, "c.jsonl.gz", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03")
    with pytest.raises(InputError, match=r"cases file is a binary file, not text \(a NUL byte at byte offset 3"):
        read(gz)


def test_a_nul_byte_after_the_sniffed_head_is_found_with_its_line(tmp_path: Path) -> None:
    body = b'{"a": 1}\n' * 2000  # 18,000 bytes: past the 8 KiB head
    path = _write(tmp_path, "c.jsonl", body + b'{"a": \x00}\n')
    with pytest.raises(InputError, match=r"a NUL byte at byte offset 18006, line 2001\)"):
        _stream(path)
    with pytest.raises(InputError, match=r"a NUL byte at byte offset 18006\)"):
        read_text(path, "cases file")


@pytest.mark.parametrize("read", READERS)
def test_empty_file(tmp_path: Path, read) -> None:
    path = _write(tmp_path, "c.jsonl", b"")
    with pytest.raises(InputError, match=r"cases file is empty \(0 bytes\)"):
        read(path)
    got = read(path, allow_empty=True)
    assert got in ("", [])


def test_whitespace_only_is_empty_for_read_text(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.yaml", b"  \n\n")
    with pytest.raises(InputError, match="thresholds file holds only whitespace"):
        read_text(path, "thresholds file")
