"""Shared machinery of the benchmark importers: reading record files, field checks, case assembly.

Every importer turns records into :class:`~hoprag.datasets.schema.Case` objects and their context
paragraphs into deduplicated :class:`~hoprag.records.Document` objects. Problems inside a record that
do not stop the case from being useful (a supporting title absent from the context, a sentence index
out of range) become warnings on the case *and* on the result; malformed input raises ``InputError``
naming the file, record and field.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hoprag.datasets.passages import CorpusBuilder, paragraph_text
from hoprag.datasets.schema import Case
from hoprag.errors import InputError
from hoprag.files import read_text
from hoprag.jsonl import iter_jsonl_dicts, parse_json
from hoprag.records import Document

STAT_KEYS = ("records", "cases", "skipped", "documents", "duplicates_removed", "extra_documents", "warnings")


@dataclass(frozen=True)
class ImportResult:
    """What one import produced; ``stats`` has every key of :data:`STAT_KEYS`."""

    cases: list[Case]
    documents: list[Document]
    stats: dict[str, int]
    warnings: list[str]


@dataclass(frozen=True)
class RecordRef:
    """Where a record came from: file, 1-based record number and (for JSONL) its line."""

    path: Path
    number: int
    line: int | None = None

    def error(self, message: str, *, field: str | None = None, fix: str | None = None) -> InputError:
        return InputError(
            f"record {self.number}: {message}", source=str(self.path), line=self.line, field=field, fix=fix
        )

    def where(self) -> str:
        return f"{self.path.name} record {self.number}"


def read_json_records(path: Path, dataset: str) -> list[tuple[RecordRef, dict[str, Any]]]:
    """Records of a JSON array, a single JSON object or a JSONL file (detected from the content)."""
    text = read_text(path, f"{dataset} file", allow_empty=True)
    fix_empty = f"give a {dataset} file with at least one record (a JSON array or one JSON object per line)"
    if not text.strip():
        raise InputError(f"{dataset} file is empty", source=str(path), fix=fix_empty)
    try:
        data = parse_json(text, source=str(path), fix="repair the JSON array")
    except InputError:
        if text.lstrip().startswith("["):
            raise
        # Not one JSON value: JSONL, parsed from the text already read; each bad line is named.
        records = [
            (RecordRef(path, i, line), obj)
            for i, (line, obj) in enumerate(iter_jsonl_dicts(text.split("\n"), source=str(path)), start=1)
        ]
    else:
        items = data if isinstance(data, list) else [data]
        records = []
        for i, obj in enumerate(items, start=1):
            if not isinstance(obj, dict):
                raise InputError(
                    f"record {i} is a {type(obj).__name__}, not a JSON object",
                    source=str(path),
                    fix=f"give {dataset} records as JSON objects",
                )
            records.append((RecordRef(path, i, 1 if not isinstance(data, list) else None), obj))
    if not records:
        raise InputError("no records in file", source=str(path), fix=fix_empty)
    return records


_KIND_NAMES = {str: "a string", list: "a list", dict: "an object", int: "an integer", bool: "true/false"}


def require(record: dict[str, Any], name: str, kind: type, ref: RecordRef, dataset: str) -> Any:
    """The value of a required field, type-checked; a missing or mistyped field raises naming the fix."""
    expected = _KIND_NAMES.get(kind, kind.__name__)
    if name not in record or record[name] is None:
        fix = f"every {dataset} record needs '{name}' ({expected})"
        raise ref.error("missing required field", field=name, fix=fix)
    value = record[name]
    if not _is_kind(value, kind):
        raise ref.error(
            f"'{name}' is {type(value).__name__}, expected {expected}",
            field=name,
            fix=f"make '{name}' {expected} as in the original {dataset} files",
        )
    return value


def optional(
    record: dict[str, Any], name: str, kind: type, ref: RecordRef, dataset: str, default: Any
) -> Any:
    if record.get(name) is None:
        return default
    return require(record, name, kind, ref, dataset)


def _is_kind(value: Any, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def record_id(value: Any) -> str:
    return str(value)


# --- titles ---------------------------------------------------------------------------------------


def normalise(text: str) -> str:
    """Case-, accent- and punctuation-insensitive form used to match titles in text."""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in folded if not unicodedata.combining(c)).casefold()
    return " ".join(re.sub(r"[\W_]+", " ", folded).split())


def title_variants(title: str) -> set[str]:
    """The title and the title without parentheticals: ``"Foo (band)"`` -> ``{"foo band", "foo"}``."""
    base = re.sub(r"\s*\([^)]*\)", " ", title)
    return {v for v in (normalise(title), normalise(base)) if v}


def mentions(text: str, title: str, *, own_title: str | None = None) -> bool:
    """Whether ``text`` mentions ``title`` (any variant) as whole words.

    With ``own_title`` (the title of the paragraph ``text`` comes from), occurrences of that title are
    removed first, so "Darkon Wargaming Club" in its own paragraph does not count as "Darkon (film)".
    """
    haystack = f" {normalise(text)} "
    if own_title is not None:
        for variant in sorted(title_variants(own_title), key=len, reverse=True):
            haystack = haystack.replace(f" {variant} ", "  ")
    return any(f" {v} " in haystack for v in title_variants(title))


_STOPWORDS = frozenset("a an and at by de for in of on or the to".split())


def content_tokens(text: str) -> set[str]:
    """Normalised word tokens of ``text`` without one-letter words and a few function words."""
    return {t for t in normalise(text).split() if len(t) > 1 and t not in _STOPWORDS}


def token_coverage(text: str, title: str) -> float:
    """Share of the title's content tokens that occur in ``text`` (0.0 for a title without any)."""
    wanted = content_tokens(title)
    return len(wanted & content_tokens(text)) / len(wanted) if wanted else 0.0


# --- sentence-split contexts (HotpotQA, 2Wiki) -----------------------------------------------------


@dataclass(frozen=True)
class Paragraph:
    document: Document
    sentences: list[str]
    offsets: list[tuple[int, int]]


@dataclass
class CaseDraft:
    """A case being assembled; :meth:`ImportState.finish` validates it."""

    case_id: str
    query: str
    ref: RecordRef
    answers: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    chains: list[list[str]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    distractors: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    question_type: str | None = None
    warnings: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    uncertain: bool = False

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def add_edge(self, source: str, target: str, bridge_field: str | None, bridge_value: str | None) -> None:
        edge = {"from": source, "to": target, "bridge_field": bridge_field, "bridge_value": bridge_value}
        if source != target and edge not in self.edges:
            self.edges.append(edge)


def sentence_context(
    context: list[Any], ref: RecordRef, state: ImportState, draft: CaseDraft
) -> dict[str, Paragraph]:
    """``context`` ``[[title, [sentences]], ...]`` as documents, keyed by title (first wins)."""
    paragraphs: dict[str, Paragraph] = {}
    for i, item in enumerate(context):
        if not (
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], list)
            and all(isinstance(s, str) for s in item[1])
        ):
            raise ref.error(
                f"context[{i}] is not [title, [sentences]]",
                field="context",
                fix=f"give every {state.dataset} context entry as [title, [sentence, ...]]",
            )
        title, sentences = item
        text, offsets = paragraph_text(sentences)
        doc = state.builder.add_text(title, text, state.dataset)
        if title in paragraphs:
            if paragraphs[title].document.id != doc.id:
                draft.warn(f"context has two paragraphs titled {title!r}; supporting facts use the first")
            continue
        paragraphs[title] = Paragraph(doc, sentences, offsets)
    return paragraphs


def sentence_facts(
    supporting: list[Any],
    paragraphs: dict[str, Paragraph],
    ref: RecordRef,
    state: ImportState,
    draft: CaseDraft,
) -> dict[str, list[str]]:
    """Add one fact per ``[title, sent_id]``; returns fact ids per supporting title, in order."""
    by_title: dict[str, list[str]] = {}
    for i, item in enumerate(supporting):
        pair = isinstance(item, list) and len(item) == 2
        if not (pair and isinstance(item[0], str) and _is_kind(item[1], int)):
            raise ref.error(
                f"supporting_facts[{i}] is not [title, sentence index]",
                field="supporting_facts",
                fix="give every supporting fact as [title, integer sentence index]",
            )
        title, sent_id = item
        para = paragraphs.get(title)
        if para is None:
            fact_id, source_id, spans = f"missing:{title}:s{sent_id}", f"missing:{title}", []
            draft.warn(f"supporting title {title!r} is not in the record's context; {fact_id} has no span")
        elif not 0 <= sent_id < len(para.sentences):
            fact_id, source_id, spans = f"{para.document.id}:s{sent_id}", para.document.id, []
            draft.warn(
                f"supporting fact [{title!r}, {sent_id}] is out of range (paragraph has "
                f"{len(para.sentences)} sentences); fact {fact_id} has no span"
            )
        else:
            fact_id, source_id = f"{para.document.id}:s{sent_id}", para.document.id
            start, end = para.offsets[sent_id]
            spans = [{"start": start, "end": end, "text": para.document.text[start:end]}]
        if fact_id in draft.facts:
            draft.warn(f"supporting fact [{title!r}, {sent_id}] is listed twice; kept once")
            continue
        draft.facts[fact_id] = {"source_id": source_id, "spans": spans, "entities": [title], "title": title}
        by_title.setdefault(title, []).append(fact_id)
    return by_title


# --- state ------------------------------------------------------------------------------------------


class ImportState:
    """Accumulates cases, documents, warnings and counts across all files of one import."""

    def __init__(self, dataset: str) -> None:
        self.dataset = dataset
        self.builder = CorpusBuilder()
        self.cases: list[Case] = []
        self.warnings: list[str] = []
        self.records = 0
        self.skipped = 0
        self.extra_documents = 0
        self._seen: dict[str, str] = {}

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def skip(self, ref: RecordRef, reason: str) -> None:
        self.skipped += 1
        self.warn(f"{ref.where()}: skipped: {reason}")

    def claim_id(self, case_id: str, ref: RecordRef) -> bool:
        """False (and a skip) when the case id was already imported from an earlier record."""
        if case_id in self._seen:
            self.skip(ref, f"case id {case_id!r} already imported from {self._seen[case_id]}")
            return False
        self._seen[case_id] = ref.where()
        return True

    def finish(self, draft: CaseDraft, grades: dict[str, int] | None = None) -> None:
        """Validate the draft into a Case; grade 1 for facts a later fact depends on, else 2."""
        has_out = {e["from"] for e in draft.edges}
        for fact_id, fact in draft.facts.items():
            fact["grade"] = grades[fact_id] if grades is not None else (1 if fact_id in has_out else 2)
        data = {
            "case_id": draft.case_id,
            "query": draft.query,
            "answers": draft.answers,
            "aliases": draft.aliases,
            "facts": draft.facts,
            "valid_chains": draft.chains or [list(draft.facts)],
            "edges": draft.edges,
            "distractors": [{"source_id": d, "error_type": "unlabelled"} for d in _unique(draft.distractors)],
            # Benchmarks label no source family or question template (question_type is a coarse
            # class, not a template): a grouped split over them would put every case in one group.
            # The entities (supporting titles) are real grouping keys: cases sharing one stay together.
            "split_keys": {
                "source_family": None,
                "entities": _unique(draft.entities),
                "template": None,
                "seed": draft.metadata.get("original_id", draft.case_id),
            },
            "uncertain": draft.uncertain,
            "question_type": draft.question_type,
            "dataset": self.dataset,
            "warnings": draft.warnings,
            "metadata": draft.metadata,
        }
        try:
            case = Case.model_validate(data)
        except ValidationError as exc:
            from hoprag.validation_messages import problems

            first = problems(exc)[0]
            raise draft.ref.error(
                f"cannot build a case: {first.wrong}",
                field=first.field or None,
                fix="check the record against the dataset's original format",
            ) from None
        for message in draft.warnings:
            self.warn(f"{draft.ref.where()} ({draft.case_id}): {message}")
        self.cases.append(case)

    def result(self) -> ImportResult:
        stats = {
            "records": self.records,
            "cases": len(self.cases),
            "skipped": self.skipped,
            "documents": len(self.builder),
            "duplicates_removed": self.builder.duplicates_removed,
            "extra_documents": self.extra_documents,
            "warnings": len(self.warnings),
        }
        return ImportResult(list(self.cases), self.builder.documents(), stats, list(self.warnings))


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
