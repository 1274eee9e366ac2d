"""What an existing file holds, told from its first bytes: the kinds of file hoprag writes.

The output guard (:mod:`hoprag.io.outputs`) replaces an existing file only when it is of the kind the
command writes (a report over a report, traces over traces); anything else needs ``--force``. Each
kind is a name and a sniffer over the file's head, so "it looks like a cases file" can be said of a
file that would otherwise be lost.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "ANY_JSONL",
    "CASES_JSONL",
    "CORPUS_JSONL",
    "HTML_REPORT",
    "JSON_DOCUMENT",
    "KINDS",
    "MARKDOWN_REPORT",
    "OTLP_JSON",
    "TRACES_JSONL",
    "TREC_QRELS",
    "TREC_RUN",
    "RECORDS_JSONL",
    "TRACES_HEADER_KEY",
    "TRACE_KEYS",
    "OutputKind",
    "describe",
]

HEAD_BYTES = 65536  # enough for the first record of any file we write


@dataclass(frozen=True)
class OutputKind:
    """A kind of file hoprag writes: ``name`` as a user reads it, ``sniff`` tells it from a file's head."""

    name: str
    sniff: Callable[[str], bool]

    def matches(self, head: str) -> bool:
        return self.sniff(head)


def _first_line(head: str) -> str:
    for line in head.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _first_record(head: str) -> dict | None:
    line = _first_line(head)
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


#: the key of a traces file's run header (:class:`hoprag.io.traces.TracesHeader`)
TRACES_HEADER_KEY = "hoprag_traces"
#: keys only a trace has; a record with ``case_id`` and ``query`` and none of these is a case
TRACE_KEYS = frozenset({"question", "answer", "evidence", "steps", "stop_reason", "run_id"})


def _is_traces(head: str) -> bool:
    obj = _first_record(head)
    return obj is not None and (TRACES_HEADER_KEY in obj or bool(TRACE_KEYS & obj.keys()))


def _is_cases(head: str) -> bool:
    obj = _first_record(head)
    return obj is not None and "case_id" in obj and "query" in obj and not TRACE_KEYS & obj.keys()


def _is_corpus(head: str) -> bool:
    obj = _first_record(head)
    return obj is not None and "text" in obj and ("id" in obj or "title" in obj) and "query" not in obj


def _is_jsonl(head: str) -> bool:
    return _first_record(head) is not None


def _is_json_document(head: str) -> bool:
    """A JSON document written with indentation (our reports), or any one JSON value in the head."""
    text = head.lstrip()
    if not text.startswith(("{", "[")):
        return False
    if _first_line(text) in ("{", "["):
        return True
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


_QRELS_LINE = re.compile(r"^\S+\s+\S+\s+\S+\s+-?\d+$")
_RUN_LINE = re.compile(r"^\S+\s+\S+\s+\S+\s+\d+\s+\S+\s+\S+$")


def _lines_match(head: str, pattern: re.Pattern[str]) -> bool:
    lines = [line.strip() for line in head.splitlines()[:20] if line.strip()]
    if len(head) >= HEAD_BYTES and lines:
        lines = lines[:-1]  # the last line of a cut head may be partial
    return bool(lines) and all(pattern.match(line) for line in lines)


def _is_html(head: str) -> bool:
    start = head.lstrip()[:64].lower()
    return start.startswith(("<!doctype html", "<html"))


def _is_markdown(head: str) -> bool:
    return head.lstrip().startswith("#")


TRACES_JSONL = OutputKind("traces file (JSONL)", _is_traces)
CASES_JSONL = OutputKind("cases file (JSONL)", _is_cases)
CORPUS_JSONL = OutputKind("corpus file (JSONL)", _is_corpus)
ANY_JSONL = OutputKind("JSONL file", _is_jsonl)
#: records of our own (shortcut findings, judgments): JSONL that is not cases, traces or a corpus
RECORDS_JSONL = OutputKind(
    "JSONL record file", lambda head: _is_jsonl(head) and not (_is_cases(head) or _is_traces(head) or _is_corpus(head))
)
#: one JSON value (our reports are indented); a one-line cases, traces or corpus file is not one
JSON_DOCUMENT = OutputKind(
    "JSON document", lambda head: _is_json_document(head) and not (_is_cases(head) or _is_traces(head) or _is_corpus(head))
)
TREC_QRELS = OutputKind("TREC qrels file", lambda head: _lines_match(head, _QRELS_LINE))
TREC_RUN = OutputKind("TREC run file", lambda head: _lines_match(head, _RUN_LINE))
HTML_REPORT = OutputKind("HTML page", _is_html)
#: OpenTelemetry log records in the OTLP JSON encoding, one export request per line (``eval --otel-out``);
#: a file of spans is another kind: it is what a trace import reads, and replacing it would lose the traces
OTLP_JSON = OutputKind("file of OTLP JSON log records", lambda head: head.lstrip().startswith('{"resourceLogs"'))
MARKDOWN_REPORT = OutputKind("Markdown text", _is_markdown)

#: most specific first: the first that matches names what a file looks like
KINDS = (TRACES_JSONL, CASES_JSONL, CORPUS_JSONL, OTLP_JSON, RECORDS_JSONL, ANY_JSONL, JSON_DOCUMENT, TREC_RUN,
         TREC_QRELS, HTML_REPORT, MARKDOWN_REPORT)


def describe(head: str) -> str:
    """What a file with this head looks like, for a message: 'a cases file (JSONL)', 'text', ..."""
    for kind in KINDS:
        if kind.matches(head):
            return f"a {kind.name}"
    return "a file of another kind"
