"""Open the files a user names: every way a path can be wrong gets its own message and fix.

One helper for every reader of a user-given file, so that a missing file, a directory given for a
file (or a file for a directory), a file without read permission, text that is not UTF-8 (with the
byte offset of the first bad byte and the likely encoding), an empty file and a binary file each
fail with an :class:`~hoprag.errors.InputError` naming the path and the fix, instead of a
``UnicodeDecodeError`` or ``IsADirectoryError`` traceback. Only regular files are read: a FIFO,
socket or device (``/dev/stdin`` and ``<(...)`` included) would block or never end, and is refused.
A UTF-8 byte-order mark is accepted and dropped. Files are read once: :func:`read_text` reads the bytes and decodes them in memory,
:func:`open_text` streams line by line.
"""

from __future__ import annotations

import codecs
import difflib
import io
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from hoprag.errors import InputError

__all__ = ["check_dir", "check_file", "open_text", "read_text"]

_SNIFF = 8192  # bytes inspected for a BOM and NUL bytes before streaming, as git and grep do
_BLOCK = 1 << 20  # bytes decoded at a time when locating a bad byte
_BOMS = (  # UTF-32 first: its little-endian BOM starts with UTF-16's
    (codecs.BOM_UTF32_LE, "UTF-32LE", "utf-32"),
    (codecs.BOM_UTF32_BE, "UTF-32BE", "utf-32"),
    (codecs.BOM_UTF16_LE, "UTF-16LE", "utf-16"),
    (codecs.BOM_UTF16_BE, "UTF-16BE", "utf-16"),
)
# Bytes cp1252 leaves undefined: text holding one is not cp1252.
_CP1252_UNDEFINED = frozenset(b"\x81\x8d\x8f\x90\x9d")


def check_file(path: str | Path, what: str = "file") -> Path:
    """``path`` as a :class:`Path` if it names a readable file; otherwise raise naming what is wrong."""
    path = Path(path)
    mode = _stat(path, what, want_dir=False)
    if stat.S_ISDIR(mode):
        raise InputError(f"{what} is a directory, not a file", source=str(path), fix=_dir_fix(path))
    if not stat.S_ISREG(mode):
        raise _not_regular(path, what, mode)
    if not os.access(path, os.R_OK):
        raise _unreadable(path, what)
    return path


def check_dir(path: str | Path, what: str = "directory") -> Path:
    """``path`` as a :class:`Path` if it names a directory that can be listed; otherwise raise."""
    path = Path(path)
    mode = _stat(path, what, want_dir=True)
    if not stat.S_ISDIR(mode):
        raise InputError(
            f"{what} is a file, not a directory",
            source=str(path),
            fix=f"pass the directory itself (this file's folder is {path.parent})",
        )
    if not os.access(path, os.R_OK | os.X_OK):
        raise _unreadable(path, what)
    return path


def read_text(path: str | Path, what: str = "file", *, allow_empty: bool = False) -> str:
    """The whole file as text; raises :class:`InputError` for every way it cannot be read as UTF-8."""
    path = check_file(path, what)
    with _open_binary(path, what) as handle:
        data = _read_or_raise(handle.read, path, what)
    if not data and not allow_empty:
        raise _empty(path, what)
    start = _check_head(data[:_SNIFF], path, what)
    nul = data.find(b"\x00", start)
    if nul >= 0:
        raise _binary(path, what, data[:_SNIFF], nul)
    try:
        text = data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, what, data, start + exc.start, exc.reason) from None
    if not allow_empty and not text.strip():
        raise _empty(path, what, blank=True)
    return text


@contextmanager
def open_text(path: str | Path, what: str = "file", *, allow_empty: bool = False) -> Iterator[Iterator[str]]:
    """Context manager yielding the file's lines, decoded as UTF-8 while they stream.

    Lines keep their endings (``\r\n`` included), as ``open(newline="")`` gives them. A bad byte
    anywhere raises when the stream reaches it, naming its offset and line.
    """
    path = check_file(path, what)
    with _open_binary(path, what) as handle:
        head = handle.peek(_SNIFF)[:_SNIFF] if hasattr(handle, "peek") else b""
        if not head and not allow_empty and _is_regular(path):
            raise _empty(path, what)
        start = _check_head(head, path, what)
        nul = head.find(b"\x00", start)
        if nul >= 0:
            raise _binary(path, what, head, nul)
        handle.read(start)
        text = io.TextIOWrapper(handle, encoding="utf-8", errors="strict", newline="")
        try:
            yield _lines(text, path, what, start)
        finally:
            text.detach()  # the binary handle is closed by its own context manager


def _lines(text: io.TextIOWrapper, path: Path, what: str, skip: int) -> Iterator[str]:
    """The text stream's lines (C-speed); where it fails, a second pass over the bytes says where."""
    try:
        for line in text:
            if "\x00" in line:
                raise _locate(path, what, skip)
            yield line
    except UnicodeDecodeError:
        raise _locate(path, what, skip) from None
    except OSError as exc:  # an I/O error mid-file (a failing disk, a vanished network mount)
        raise InputError(f"{what} cannot be read ({exc.strerror or exc})", source=str(path),
                         fix="check the disk or mount it lives on and try again") from None


def _locate(path: Path, what: str, skip: int) -> InputError:
    """The error for the first NUL or undecodable byte of ``path``, with its offset and line.

    Only run once reading has failed, so the cost of a second pass is paid by broken files alone.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    offset = newlines = 0  # bytes, and line ends among them, before the current block
    prev = b""  # the end of the previous block: context for a bad byte at the start of this one
    with _open_binary(path, what) as handle:
        while True:
            block = _read_or_raise(lambda: handle.read(_BLOCK), path, what)
            if skip:
                block, offset, skip = block[skip:], skip, 0
            nul = block.find(b"\x00")
            pending = len(decoder.getstate()[0])  # the bytes of a character split across blocks
            try:
                decoder.decode(block if nul < 0 else block[:nul], final=not block)
            except UnicodeDecodeError as exc:  # exc.object: the pending bytes (the end of prev) and the block
                line = newlines + exc.object.count(b"\n", 0, exc.start) + 1
                return _not_utf8(path, what, prev + block, offset - pending + exc.start, exc.reason, line=line,
                                 line_offset=offset - len(prev))
            if nul >= 0:
                return _binary(path, what, block, offset + nul, line=newlines + block.count(b"\n", 0, nul) + 1)
            if not block:
                return InputError(f"{what} changed while it was read", source=str(path), fix="read it again")
            offset += len(block)
            newlines += block.count(b"\n")
            prev = block[-4096:]


def _stat(path: Path, what: str, *, want_dir: bool) -> int:
    try:
        return path.stat().st_mode
    except FileNotFoundError:
        raise _missing(path, what, want_dir=want_dir) from None
    except NotADirectoryError:
        blocker = next((p for p in reversed(path.parents) if p.is_file()), path.parent)
        raise InputError(
            f"{what} not found: {blocker} is a file, so nothing can be inside it",
            source=str(path),
            fix=f"check the path (did you mean {blocker} itself?)",
        ) from None
    except PermissionError:
        raise InputError(
            f"{what} cannot be reached (permission denied on a folder of its path)",
            source=str(path),
            fix="check the permissions of the folders on its path",
        ) from None
    except OSError as exc:
        raise InputError(f"{what} cannot be read ({exc.strerror})", source=str(path), fix="check the path") from None


@contextmanager
def _open_binary(path: Path, what: str) -> Iterator[BinaryIO]:
    try:
        handle = path.open("rb")
    except PermissionError:
        raise _unreadable(path, what) from None
    except IsADirectoryError:
        raise InputError(f"{what} is a directory, not a file", source=str(path), fix=_dir_fix(path)) from None
    except OSError as exc:
        raise InputError(f"{what} cannot be opened ({exc.strerror})", source=str(path), fix="check the path") from None
    with handle:
        yield handle  # type: ignore[misc]


def _read_or_raise(read: Callable[[], bytes], path: Path, what: str) -> bytes:
    try:
        return read()
    except OSError as exc:  # an I/O error mid-file (a failing disk, a vanished network mount)
        raise InputError(f"{what} cannot be read ({exc.strerror or exc})", source=str(path),
                         fix="check the disk or mount it lives on and try again") from None


def _missing(path: Path, what: str, *, want_dir: bool) -> InputError:
    parent = path.parent
    if not parent.is_dir():
        top = next((p for p in path.parents if p.is_dir()), None)
        hint = f"its folder {parent} does not exist either"
        if top is not None and top != Path("."):
            hint += f" (the nearest existing one is {top})"
        return InputError(f"{what} not found: {hint}", source=str(path), fix="check the path")
    fix = "check the path"
    try:
        names = [entry.name for _, entry in zip(range(2000), os.scandir(parent))
                 if entry.is_dir() or not want_dir]
    except OSError:
        names = []
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.8)
    if close:
        fix += " (did you mean " + " or ".join(str(parent / n) for n in close) + "?)"
    return InputError(f"{what} not found", source=str(path), fix=fix)


def _dir_fix(path: Path) -> str:
    try:
        names = sorted(e.name for e in os.scandir(path) if e.is_file() and not e.name.startswith("."))
    except OSError:
        names = []
    if not names:
        return "pass the path of a file, not of a folder"
    shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
    return f"pass one of the files inside it ({shown}), not the folder"


def _not_regular(path: Path, what: str, mode: int) -> InputError:
    """A FIFO, socket or device: reading one blocks until a writer comes (or forever), or never ends.

    ``/dev/stdin`` and ``<(...)`` are pipes too, and refused the same way: every reader here reads
    its file to the end, some twice (to locate a bad byte), which a stream cannot give.
    """
    if stat.S_ISFIFO(mode):
        kind = "a named pipe (FIFO) or a stream such as /dev/stdin"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "a device"
    else:
        kind = "not a regular file"
    return InputError(f"{what} is {kind}, not a regular file; hoprag reads only files it can read to the end",
                      source=str(path), fix=f"write the data to a file first (e.g. cat > data.jsonl) and pass that "
                      f"file as the {what}")


def _unreadable(path: Path, what: str) -> InputError:
    return InputError(
        f"{what} cannot be read (permission denied)",
        source=str(path),
        fix=f"give yourself read access (chmod u+r {path}) or pass a copy you can read",
    )


def _empty(path: Path, what: str, *, blank: bool = False) -> InputError:
    kind = "holds only whitespace" if blank else "is empty (0 bytes)"
    return InputError(f"{what} {kind}", source=str(path),
                      fix=f"pass the {what} with its content (was it truncated or not yet written?)")


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def _check_head(head: bytes, path: Path, what: str) -> int:
    """Bytes to skip at the start (a UTF-8 BOM); a UTF-16/32 BOM raises with the conversion to run."""
    for bom, name, codec in _BOMS:
        if head.startswith(bom):
            raise InputError(
                f"{what} is {name} text (it starts with a {name} byte-order mark), not UTF-8",
                source=str(path),
                fix=f"convert it: iconv -f {codec} -t utf-8 {path} > {_utf8_name(path)}",
            )
    return len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0


def _binary(path: Path, what: str, head: bytes, offset: int, *, line: int | None = None) -> InputError:
    where = f"byte offset {offset}" + (f", line {line}" if line is not None else "")
    sample = head[:512]
    even, odd = sample[0::2], sample[1::2]
    if sample and odd.count(0) > len(odd) * 0.6 and even.count(0) < len(even) * 0.1:
        guess, codec = "UTF-16LE text without a byte-order mark", "utf-16le"
    elif sample and even.count(0) > len(even) * 0.6 and odd.count(0) < len(odd) * 0.1:
        guess, codec = "UTF-16BE text without a byte-order mark", "utf-16be"
    else:
        return InputError(
            f"{what} is a binary file, not text (a NUL byte at {where})",
            source=str(path),
            fix=f"pass the {what} itself as UTF-8 text (check `file {path}`: is it compressed or the wrong file?)",
        )
    return InputError(
        f"{what} looks like {guess}, not UTF-8 (NUL bytes from {where})",
        source=str(path),
        fix=f"convert it: iconv -f {codec} -t utf-8 {path} > {_utf8_name(path)}",
    )


def _not_utf8(path: Path, what: str, data: bytes, offset: int, reason: str, *, line: int | None = None,
              line_offset: int = 0) -> InputError:
    """``offset`` is absolute in the file; ``data`` starts at ``line_offset`` (a whole file or one line)."""
    local = offset - line_offset
    if line is None:
        line = data.count(b"\n", 0, local) + 1
    bad = data[local:local + 1].hex().upper()
    where = f"byte 0x{bad} at byte offset {offset}, line {line}"
    def convert(codec: str) -> str:  # not str.format: a path may hold braces
        return f"iconv -f {codec} -t utf-8 {path} > {_utf8_name(path)}"

    before, sample = data[max(0, local - 4096):local], data[max(0, local - 4096):local + 4096]
    utf8_before = any(ord(c) >= 0x80 for c in before.decode("utf-8", "ignore"))
    cut = reason == "unexpected end of data"
    if cut and utf8_before:
        return InputError(
            f"{what} ends in the middle of a UTF-8 character ({where}): the file looks truncated",
            source=str(path),
            fix=f"write the {what} again in full",
        )
    high = [b for b in sample if b >= 0x80]
    if utf8_before:
        fix = ("it mixes encodings: the text before this byte is UTF-8 with non-ASCII characters; re-save the "
               "part that was pasted from elsewhere as UTF-8, or drop the byte")
    elif len(high) * 3 > len(sample) > 16:
        fix = (f"it looks like a multi-byte encoding (Shift-JIS, GBK, EUC-KR, ...); find it with file -i {path} "
               f"and convert it: {convert('ENCODING')}")
    elif not set(sample) & _CP1252_UNDEFINED:
        name = "cp1252 (Windows-1252)" if any(b < 0xA0 for b in high) else "latin-1/cp1252"
        fix = f"it looks like {name}; convert it: {convert('cp1252')}"
    else:
        fix = f"find its encoding (file -i {path}) and convert it: {convert('ENCODING')}"
    if cut:
        where += "; or the file was cut short inside a character"
    return InputError(f"{what} is not UTF-8 text ({where})", source=str(path), fix=fix)


def _utf8_name(path: Path) -> Path:
    """Where the converted copy goes: beside the original, ``cases.jsonl`` -> ``cases.utf8.jsonl``."""
    return path.with_name(f"{path.stem}.utf8{path.suffix}")
