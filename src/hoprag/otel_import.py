"""Another framework's OpenTelemetry spans as hoprag Traces, so ``hoprag eval`` can score its pipeline.

Spans come from an OTLP JSON file (:mod:`hoprag.otlp_spans`, streamed). They are grouped by trace
id; traces with no common root that share a ``session.id`` are one trace (a framework without a
parent span per question leaves each call its own trace). In each trace

* a retrieval call is the outermost retrieval span of a nest: an OpenInference ``RETRIEVER`` span
  (``input.value`` the query, ``retrieval.documents.N.document.id/score/content/metadata`` the hit of
  rank N+1), or an OTel GenAI one (``gen_ai.operation.name = retrieval``,
  ``gen_ai.retrieval.query.text``, ``gen_ai.retrieval.documents`` a JSON array of ``{id, score}``,
  ``gen_ai.data_source.id``), or hoprag's own hop span (``hoprag.hop``, ``hoprag.selected_ids``).
  Retrieval spans inside it (LlamaIndex's ``retrieve`` → ``_retrieve``) are the same call; when the
  outer one recorded no documents the first inner one's are used. Each call is one
  :class:`~hoprag.records.HopStep`, in start order (hop = its position, or ``hoprag.hop``);
* the selected evidence is the retrieved documents the answering LLM call's prompt holds, in the
  prompt's order, else the ``RERANKER`` spans' output, else every retrieved document in step order,
  then rank (:mod:`hoprag.otel_evidence`, the one place of the rule); ``plan.evidence_from`` says which;
* the answer is the text of the LLM span that ended last (``llm.output_messages.0.message.content``,
  else ``output.value`` with JSON unwrapped: ``{"replies": [...]}``, ``{"response": ...}``), else the
  root's output; the question is the root's input text, else the first retrieval query;
* the case id is the first of ``case_attrs`` (default ``hoprag.case_id``, ``session.id``; ``metadata.KEY``
  reads KEY of the OpenInference ``metadata`` JSON) found on the root, then any span, then a
  ``case_id`` in the ``metadata`` attribute, then a ``tag.tags`` entry naming a case, then the question
  matched to the cases' queries. With ``cases`` given, only their ids count.

With a resolver (:mod:`hoprag.document_resolution`, ``--corpus`` / ``--index``) recorded document ids
become corpus ids. The trace keeps where it came from (``plan.otel_trace_id`` / ``otel_span_id``: the
root span's), so ``hoprag eval --otel-out`` attaches its scores there (:mod:`hoprag.otel_scores`).
Traces without a retrieval or LLM span are skipped and counted; a trace naming no case is refused,
naming it, or with ``lenient`` skipped and counted. What is written passes the
redaction boundary (:mod:`hoprag.security.boundary`) like the traces of ``hoprag run``.
"""

from __future__ import annotations

import json
import pickle
import re
import stat
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoprag.document_resolution import DEFAULT_MIN_SHARE, DocumentResolver, RecordedDocument
from hoprag.errors import InputError
from hoprag.otel_evidence import Found, select_evidence
from hoprag.otel_round_trip import (BRIDGE, CLAIMS, EVIDENCE, SHIFTS, bridge_from, claims_from, evidence_from,
                                    hit_from, shifts_from)
from hoprag.otel_span_text import answer_text, root_question, span_query, token_count
from hoprag.otel_trace_groups import SpanGroup, complete_groups, plan_groups
from hoprag.otlp_spans import WHAT, OtelSpan, iter_otlp_spans
from hoprag.records import Answer, Hit, HopStep, Trace, Usage

__all__ = ["DEFAULT_CASE_ATTRS", "ImportSummary", "OtelSpan", "import_otel_traces", "iter_traces", "read_otlp_spans",
           "spans_to_traces"]

DEFAULT_CASE_ATTRS = ("hoprag.case_id", "session.id")
_DOC = re.compile(r"^(retrieval\.documents|reranker\.output_documents)\.(\d+)\.document\.(id|score|content|metadata)$")


@dataclass(frozen=True)
class ImportSummary:
    """What an import read and wrote; ``skipped`` counts traces by reason, ``routes`` documents by route,
    ``evidence_from`` traces by where their selected evidence came from (:mod:`hoprag.otel_evidence`)."""

    spans: int
    traces: int
    skipped: int
    out: Path
    skipped_by: dict[str, int] = field(default_factory=dict)
    routes: dict[str, int] = field(default_factory=dict)
    evidence_from: dict[str, int] = field(default_factory=dict)


def read_otlp_spans(path: str | Path) -> list[OtelSpan]:
    """Every span of an OTLP JSON file (see :mod:`hoprag.otlp_spans`)."""
    return list(iter_otlp_spans(path))


def spans_to_traces(spans: Iterable[OtelSpan], *, case_attrs: Sequence[str] = DEFAULT_CASE_ATTRS,
                    run_id: str = "otel-import", source: str = WHAT, cases: Mapping[str, str] | None = None,
                    resolver: DocumentResolver | None = None, lenient: bool = False,
                    skipped_by: Counter[str] | None = None) -> tuple[list[Trace], int]:
    """The Traces ``spans`` describe, in order of first start, and how many traces were skipped.

    ``cases``: case id → query, for matching questions and checking ids; ``skipped_by`` is filled
    with the reasons traces were skipped. Holds every span: a file is streamed by
    :func:`import_otel_traces`."""
    skipped_by = Counter() if skipped_by is None else skipped_by
    made = sorted(iter_traces(complete_groups(spans), case_attrs=case_attrs, run_id=run_id, source=source,
                              cases=cases, resolver=resolver, lenient=lenient, skipped_by=skipped_by),
                  key=lambda pair: pair[0])
    return [t for _, t in made], sum(skipped_by.values())


def iter_traces(groups: Iterable[SpanGroup], *, case_attrs: Sequence[str] = DEFAULT_CASE_ATTRS,
                run_id: str = "otel-import", source: str = WHAT, cases: Mapping[str, str] | None = None,
                resolver: DocumentResolver | None = None, lenient: bool = False,
                skipped_by: Counter[str] | None = None) -> Iterator[tuple[tuple[int, int], Trace]]:
    """Each group's Trace as the group arrives, with its place in the output (first start, then
    first span in the file); refuses, at the end, a file none of whose traces could be read."""
    skipped_by = Counter() if skipped_by is None else skipped_by
    questions = {_norm(q): cid for cid, q in (cases or {}).items()}
    groups_seen = made = 0
    for group in groups:
        groups_seen += 1
        trace_id, spans = group.key, group.spans
        if not any(s.kind in ("RETRIEVER", "LLM") for s in spans):
            skipped_by["without retrieval or LLM spans"] += 1
            continue
        trace = _trace(trace_id, spans, case_attrs, run_id, cases, questions, resolver)
        if not trace.case_id:
            if not lenient:
                unmatched = ", and its question is none of the cases' queries" if cases else ""
                raise InputError(
                    f"trace {trace_id} (question {trace.question[:80]!r}) names no case: none of its spans has "
                    f"{' or '.join(case_attrs)}{unmatched}",
                    source=source, fix="set the case id as a span attribute (or in the metadata as case_id), name "
                    "the attribute that holds it with --case-attr NAME, pass --cases CASES to match questions to "
                    "the cases' queries, or --lenient to skip such traces")
            skipped_by["naming no case"] += 1
            continue
        made += 1
        yield (group.start_ns, group.first), trace
    if not made:
        raise InputError(f"none of its {groups_seen} traces has an OpenInference retrieval or LLM span (or a GenAI "
                         f"one) naming a case "
                         f"({_reasons(skipped_by)})", source=source,
                         fix="instrument the pipeline with OpenInference (openinference.span.kind = RETRIEVER / LLM) "
                         "or the OpenTelemetry GenAI conventions (gen_ai.operation.name = retrieval / chat)")


def _reasons(skipped_by: Counter[str]) -> str:
    return ", ".join(f"{n} {why}" for why, n in skipped_by.items()) or "none skipped"


def _trace(trace_id: str, spans: list[OtelSpan], case_attrs: Sequence[str], run_id: str,
           cases: Mapping[str, str] | None, questions: Mapping[str, str], resolver: DocumentResolver | None) -> Trace:
    by_id = {s.span_id: s for s in spans}
    roots = [s for s in spans if s.parent_id not in by_id]
    root = roots[0]
    start = spans[0].start_ns
    warnings: list[str] = []
    steps, found, texts = [], [], {}
    for number, (span, inner) in enumerate(_retrieval_calls(spans, by_id), start=1):
        hits, contents = _hits(span, warnings, resolver)
        if not hits and inner is not None:
            hits, contents = _hits(inner, warnings, resolver)
        query = span_query(span) or (span_query(inner) if inner is not None else "")
        hop, selected = span.attributes.get("hoprag.hop"), span.attributes.get("hoprag.selected_ids")
        step = HopStep(step_id=str(span.attributes.get("hoprag.step_id") or f"s{number}"),
                       hop=hop if isinstance(hop, int) and hop >= 1 else number,
                       sub_query=str(span.attributes.get("hoprag.sub_query") or query), issued_query=query,
                       hits=tuple(hits), selected=tuple(selected if isinstance(selected, list) else
                                                        (h.chunk_id for h in hits)),
                       bridge=bridge_from(span.attributes.get(BRIDGE)),
                       depends_on=tuple(str(d) for d in span.attributes.get("hoprag.depends_on") or ()),
                       latency_ms=(span.end_ns - span.start_ns) / 1e6, cumulative_ms=(span.end_ns - start) / 1e6)
        steps.append(step)
        found += [Found(hit, content, step) for hit, content in zip(hits, contents)]
        texts.update((h.doc_id, c) for h, c in zip(hits, contents) if h.doc_id not in texts)
    own = next((s for s in spans if "hoprag.question" in s.attributes), None)  # hoprag's own question span
    llms = sorted((s for s in spans if s.kind == "LLM"), key=lambda s: s.end_ns)
    evidence, route = (own and evidence_from(own.attributes.get(EVIDENCE))) or [], "hoprag"
    if not evidence:
        reranked = [Found(hit, content, None) for s in spans if s.kind == "RERANKER"
                    for hit, content in zip(*_hits(s, warnings, resolver, "reranker.output_documents"))]
        evidence, route = select_evidence(found, reranked, llms, texts, steps[-1] if steps else None)
    answer = next((t for t in (answer_text(s) for s in reversed(llms)) if t), "") or answer_text(own or root)
    usage = Usage(prompt_tokens=sum(token_count(s, "llm.token_count.prompt", "gen_ai.usage.input_tokens") for s in llms),
                  completion_tokens=sum(token_count(s, "llm.token_count.completion", "gen_ai.usage.output_tokens")
                                        for s in llms))
    question = (str(own.attributes["hoprag.question"]) if own else "") or next(
        (q for q in (root_question(r) for r in roots) if q), "") or (steps[0].sub_query if steps else "")
    case_id = _case_id(roots, spans, case_attrs, cases, questions, question)
    return Trace(run_id=run_id, case_id=case_id, question=question, steps=tuple(steps), evidence=tuple(evidence),
                 answer=_own_answer(own, answer) if own else Answer(text=answer, abstained=not answer),
                 stop_reason=str((own.attributes.get("hoprag.stop_reason") if own else "")
                                 or ("answered" if answer else "no_answer")),
                 usage=usage, engine=f"otel:{root.service or 'unknown'}",
                 latency_ms=(max(s.end_ns for s in spans) - start) / 1e6,
                 plan={"otel_trace_id": root.trace_id or trace_id, "otel_span_id": root.span_id,
                       "evidence_from": route},
                 warnings=tuple(warnings), config_hash=str(own.attributes.get("hoprag.config_hash") or "") if own else "",
                 redaction_shifts=shifts_from(own.attributes.get(SHIFTS)) if own else {})


def _own_answer(own: OtelSpan, text: str) -> Answer:
    """The answer as hoprag's own spans record it (:mod:`hoprag.otel_round_trip`)."""
    attrs = own.attributes
    confidence = attrs.get("hoprag.answer.confidence")
    return Answer(text=text, claims=claims_from(attrs.get(CLAIMS)), abstained=bool(attrs.get("hoprag.abstained")),
                  confidence=float(confidence) if isinstance(confidence, (int, float)) else 0.0,
                  partial=bool(attrs.get("hoprag.answer.partial")))


def _retrieval_calls(spans: list[OtelSpan], by_id: dict[str, OtelSpan]) -> list[tuple[OtelSpan, OtelSpan | None]]:
    """Each outermost retrieval span, with the first retrieval span nested in it (or None)."""
    outer: list[OtelSpan] = []
    inner: dict[str, OtelSpan] = {}
    for span in spans:  # in start order: an ancestor comes before its descendants
        if span.kind != "RETRIEVER":
            continue
        ancestor, parent = None, by_id.get(span.parent_id)
        seen = 0
        while parent is not None and seen < 10_000:
            if parent.kind == "RETRIEVER":
                ancestor = parent
            parent, seen = by_id.get(parent.parent_id), seen + 1
        if ancestor is None:
            outer.append(span)
        elif ancestor.span_id not in inner and _documents(span):
            inner[ancestor.span_id] = span
    return [(s, inner.get(s.span_id)) for s in outer]


def _documents(span: OtelSpan, prefix: str = "retrieval.documents") -> list[dict[str, Any]]:
    """The recorded documents of a span in rank order: OpenInference's flattened attributes, the
    GenAI ``gen_ai.retrieval.documents`` JSON array, or hoprag's ``hoprag.selected_ids``."""
    docs: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        found = _DOC.match(key)
        if found and found.group(1) == prefix:
            docs.setdefault(int(found.group(2)), {})[found.group(3)] = value
    if docs or prefix != "retrieval.documents":
        return [docs[i] for i in sorted(docs)]
    recorded = span.attributes.get("gen_ai.retrieval.documents")
    if isinstance(recorded, str):
        try:
            recorded = json.loads(recorded)
        except ValueError:
            recorded = None
    if isinstance(recorded, list):
        return [d if isinstance(d, dict) else {"id": d} for d in recorded]
    selected = span.attributes.get("hoprag.selected_ids")
    if isinstance(selected, list):
        return [{"id": s} for s in selected]
    return []


def _hits(span: OtelSpan, warnings: list[str], resolver: DocumentResolver | None,
          prefix: str = "retrieval.documents") -> tuple[list[Hit], list[str]]:
    """The span's documents as hits, and the text recorded with each."""
    hits, contents = [], []
    retriever = str(span.attributes.get("gen_ai.data_source.id") or span.name or "retriever")
    for index, doc in enumerate(_documents(span, prefix)):
        if doc.get("id") in (None, "") and not (resolver and doc.get("content")):
            warnings.append(f"retrieval span '{span.name}': document {index} has no document.id and was skipped")
            continue
        try:
            score = float(doc.get("score") or 0.0)
        except (TypeError, ValueError, OverflowError):
            score = 0.0
        doc_id = chunk_id = str(doc.get("id") or "")
        content = str(doc.get("content") or "")
        if resolver is not None:
            found = resolver.resolve(RecordedDocument(id=doc_id, content=content, metadata=doc.get("metadata")))
            doc_id, chunk_id = found.doc_id, found.chunk_id
        hits.append(hit_from(doc, chunk_id=chunk_id, doc_id=doc_id, score=score, rank=len(hits) + 1,
                             retriever=retriever))
        contents.append(content)
    return hits, contents


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _case_id(roots: list[OtelSpan], spans: list[OtelSpan], case_attrs: Sequence[str],
             cases: Mapping[str, str] | None, questions: Mapping[str, str], question: str) -> str:
    def known(value: Any) -> str:
        text = "" if value in (None, "") else str(value)
        return text if text and (cases is None or text in cases) else ""

    for attr in case_attrs:
        for span in (*roots, *spans):
            if attr.startswith("metadata."):
                found = known(_metadata(span).get(attr[len("metadata."):]))
            else:
                found = known(span.attributes.get(attr))
            if found:
                return found
    for span in spans:
        meta = _metadata(span)
        found = known(meta.get("hoprag.case_id") or meta.get("case_id"))
        if found:
            return found
    for span in spans:
        tags = span.attributes.get("tag.tags")
        for tag in tags if isinstance(tags, list) else ():
            text = str(tag)
            for prefix in ("hoprag.case_id:", "case_id:", "case:"):
                if text.startswith(prefix) and known(text[len(prefix):]):
                    return text[len(prefix):]
            if cases is not None and text in cases:
                return text
    return questions.get(_norm(question), "")


def _metadata(span: OtelSpan) -> dict[str, Any]:
    value = span.attributes.get("metadata")
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def import_otel_traces(path: str | Path, out: str | Path, *, case_attrs: Sequence[str] = DEFAULT_CASE_ATTRS,
                       run_id: str = "otel-import", redact: bool = True, cases: Mapping[str, str] | None = None,
                       resolver: DocumentResolver | None = None, min_resolved: float = DEFAULT_MIN_SHARE,
                       lenient: bool = False) -> ImportSummary:
    """Read OTLP JSON spans from ``path`` and write their Traces to ``out`` (a traces file ``hoprag eval`` reads).

    ``redact``: PII in the written traces becomes placeholders (ids and offsets kept), as ``hoprag run`` does.
    ``resolver``: recorded documents become corpus documents; fewer than ``min_resolved`` of them
    resolving is refused before anything is written.

    Memory stays flat in the file's size: the file is read once for where each trace ends
    (:mod:`hoprag.otel_trace_groups`), then again, each trace becoming its record at its last span
    and its spans freed; records wait, pickled, in a temporary file until all are read (the output
    is in order of first start, and written only once the resolution share is known).
    """
    from hoprag.io.traces import TracesHeader, write_traces
    from hoprag.security.boundary import trace_for_storage

    path, out = Path(path), Path(out)
    extra = frozenset(a for a in case_attrs if not a.startswith("metadata."))
    counted = [0]

    def spans() -> Iterator[OtelSpan]:
        for span in iter_otlp_spans(path, extra=extra):
            counted[0] += 1
            yield span

    # a pipe cannot be read twice: its spans are gathered whole
    plan = plan_groups(iter_otlp_spans(path, extra=extra)) if _rereadable(path) else None
    skipped_by: Counter[str] = Counter()
    evidence_from: Counter[str] = Counter()
    with tempfile.TemporaryFile(prefix="hoprag-import-") as spill:
        placed: list[tuple[tuple[int, int], int]] = []  # (place in the output, offset in the spill)
        for place, trace in iter_traces(complete_groups(spans(), plan), case_attrs=case_attrs, run_id=run_id,
                                        source=str(path), cases=cases, resolver=resolver, lenient=lenient,
                                        skipped_by=skipped_by):
            placed.append((place, spill.tell()))
            evidence_from[str(trace.plan.get("evidence_from", ""))] += 1
            pickle.dump(trace_for_storage(trace, "otel-import", redact=redact), spill,
                        protocol=pickle.HIGHEST_PROTOCOL)
        if resolver is not None:
            resolver.check(min_resolved, str(path))
        placed.sort(key=lambda pair: pair[0])

        def stored() -> Iterator[Trace]:
            for _, offset in placed:
                spill.seek(offset)
                yield pickle.load(spill)  # noqa: S301 - this process wrote it, a moment ago

        first = next(stored())
        header = TracesHeader(run_id=run_id, engine=first.engine)
        # the one trace writer: never over an input, complete or absent, one trace in memory at a time
        written = write_traces(out, stored(), header=header)
    return ImportSummary(spans=counted[0], traces=written, skipped=sum(skipped_by.values()), out=out,
                         skipped_by=dict(skipped_by), routes=dict(resolver.counts) if resolver is not None else {},
                         evidence_from=dict(evidence_from))


def _rereadable(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False  # the reader names what is wrong with it
