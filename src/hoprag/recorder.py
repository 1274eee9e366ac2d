"""Traces of a pipeline without OpenTelemetry, written as it runs: ``hoprag.record``.

A home-grown pipeline records its calls in one ``with`` block per question::

    import hoprag

    recorder = hoprag.Recorder("traces.jsonl", engine="my-rag")        # once per run
    for case in cases:
        with recorder.case(case.case_id, question=case.query) as r:
            hits = r.retrieval(case.query, search(case.query))          # returns the hits as given
            hits2 = r.retrieval(follow_up, search(follow_up), bridge=value)
            r.answer(text, citations=["neil-peart"])

or one case on its own: ``with hoprag.record(case_id, path="traces.jsonl") as r:`` (the file
defaults to ``traces.jsonl``). ``hoprag eval CASES traces.jsonl`` reads the file as it reads the
traces of ``hoprag run``.

* **Hits.** Each hit is an id; an ``(id, score)`` pair (the first item may be any hit below); a dict
  with ``id`` (or ``doc_id``, ``chunk_id``, ``document_id``) and optional ``score``, ``text``,
  ``title``, ``metadata``; or, read by duck typing, a LlamaIndex ``NodeWithScore`` or node, a
  Haystack or LangChain ``Document``. Frameworks give their own ids (a node UUID, a content hash):
  with ``corpus=`` a hit is resolved against the corpus exactly as :mod:`hoprag.document_resolution`
  resolves imported documents (its id, a metadata key, its text); without, its id is the first of
  ``metadata_keys`` (:data:`~hoprag.document_resolution.DEFAULT_METADATA_KEYS`) its metadata holds,
  else its own id. Ranks are the positions in the list.
* **Hops.** Each ``retrieval`` call is one step, hop = its place in call order (``hop=`` gives
  parallel branches one hop); a later hop depends on the steps of the hop before. Its latency is the
  time since the block began or the last call was recorded (so ``r.retrieval(q, search(q))`` times
  ``search``), unless ``latency_ms=`` says. ``bridge=`` records the value the pipeline carried into
  the call: without it the traces carry no bridge state and ``wrong_bridge_extraction`` is not
  assessed (:mod:`hoprag.evaluation.failures`).
* **Evidence** is what ``r.evidence(hits)`` names (the context given to the model, reranked), else
  every retrieved document in hop order, then rank, each once: the rule of the OpenTelemetry import.
* **Answer.** ``r.answer(text, citations)``: the citations (ids or hits, matched to the recorded
  hits) make one claim of the whole answer; ``claims=[(text, citations), ...]`` gives several.
  Without citations the citation classes are not assessed.
* **Errors.** When the block raises, an error trace (``stop_reason: "error"``, the calls recorded so
  far) is written and the exception goes on; ``hoprag run``'s rule applies on reading: a later
  trace of the same case supersedes it. A misuse of the recorder itself (:class:`RecorderError`)
  writes nothing.

Each case's trace passes the redaction boundary (:mod:`hoprag.security.boundary`, writer
``recorder-traces``) and is appended as one line by the one trace writer
(:func:`hoprag.io.traces.append_trace`) under a lock per file, so threads record cases concurrently;
a new file starts with a header naming the run. An existing file must be a traces file; a line cut
off by a killed process is dropped first. ``replace=True`` starts the file over.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from hoprag.document_resolution import DEFAULT_METADATA_KEYS, DocumentResolver, RecordedDocument
from hoprag.errors import InputError
from hoprag.io.outputs import check_not_input
from hoprag.io.trace_resume import check_traces_file
from hoprag.io.traces import NotTracesFileError, TracesHeader, append_trace, is_header, write_traces
from hoprag.jsonl import cut_torn_last_line, end_with_newline, read_jsonl_dicts, torn_last_line
from hoprag.records import Answer, Citation, Claim, Evidence, Hit, HopStep, Trace
from hoprag.recorder_hits import RecorderError, as_list, finite, hit_id, read_hit
from hoprag.security.boundary import trace_for_storage

__all__ = ["CaseRecording", "Recorder", "RecorderError", "record"]

DEFAULT_PATH = "traces.jsonl"
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _file_lock(path: Path) -> threading.Lock:
    """One lock per file in this process: two recorders of one file never write at once."""
    key = os.path.realpath(path)
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


class Recorder:
    """Writes one hoprag trace per case of a pipeline run into ``path`` (see the module doc).

    ``run_id`` names the run (default: the run the file's header names, else one made from the
    time); ``engine`` the pipeline; ``corpus`` (a corpus file or documents) resolves recorded ids
    against the corpus the cases cite; ``redact=False`` keeps PII (never a credential)."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_PATH, *, run_id: str | None = None,
                 engine: str = "recorder", corpus: str | os.PathLike[str] | Iterable[Any] | None = None,
                 metadata_keys: Sequence[str] = DEFAULT_METADATA_KEYS, redact: bool = True,
                 replace: bool = False) -> None:
        self.path = Path(path)
        self.run_id = run_id or ""
        self.engine = engine
        self.metadata_keys = tuple(metadata_keys)
        self.redact = redact
        self.notes: list[str] = []
        self.resolver = _resolver(corpus, self.metadata_keys) if corpus is not None else None
        self._lock = _file_lock(self.path)
        self._header_checked = False
        self._file_run_id = ""
        with self._lock:
            self._open(replace)
        # hoprag.record(case_id) opens the file once per case: the cases join the run the file began
        self.run_id = self.run_id or self._file_run_id or _new_run_id()

    def case(self, case_id: str | int, question: str = "") -> CaseRecording:
        """The ``with`` block that records one case; its trace is written when the block ends."""
        text = str(case_id).strip() if case_id is not None else ""
        if not text:
            raise RecorderError("a case needs a case id", field="case_id",
                                fix="pass the case_id of the case being answered, as in the cases file")
        return CaseRecording(self, text, str(question or ""))

    @property
    def routes(self) -> dict[str, int]:
        """With ``corpus``: recorded hits per resolution route (id, metadata, content, unresolved)."""
        return dict(self.resolver.counts) if self.resolver is not None else {}

    def _open(self, replace: bool) -> None:
        path = check_not_input(self.path, what="the traces file")
        if path.is_dir():
            raise InputError("the traces file is a directory", source=str(path),
                             fix="pass a file path, e.g. Recorder('traces.jsonl')")
        if not path.exists() or path.stat().st_size == 0:
            return
        try:
            check_traces_file(path)  # never append to a cases file, a corpus or a binary file
        except NotTracesFileError as exc:
            reason = str(exc).split(". Fix: ")[0].removeprefix(f"{path}: ").removeprefix(f"{path}:{exc.line}: ")
            raise NotTracesFileError(reason, source=str(path), line=exc.line,
                                     fix="record into another file, e.g. hoprag.Recorder('traces.jsonl'); "
                                         "a file that is not a traces file is never appended to") from None
        if replace:
            self.run_id = self.run_id or _new_run_id()
            write_traces(path, (), header=self._header(), what="the traces file")
            self._header_checked = True
            return
        torn = torn_last_line(path)
        if torn is not None:
            cut_torn_last_line(path, torn)
            self.notes.append(f"{path}: dropped the cut-off last line {torn.line} ({torn.size} bytes)")
        elif end_with_newline(path):
            self.notes.append(f"{path}: added the missing line end after the last record")
        self._file_run_id = _first_run_id(path) if path.stat().st_size else ""

    def _header(self) -> TracesHeader:
        return TracesHeader(run_id=self.run_id, engine=self.engine)

    def write(self, trace: Trace) -> Trace:
        """Append ``trace`` as stored (redacted); a new or empty file gets the run's header first."""
        stored = trace_for_storage(trace, "recorder-traces", redact=self.redact)
        with self._lock:
            try:
                if not self._header_checked and (not self.path.exists() or self.path.stat().st_size == 0):
                    append_trace(self.path, self._header())
                self._header_checked = True
                append_trace(self.path, stored)
            except OSError as exc:
                raise InputError(f"the traces file cannot be written ({exc.strerror or exc})", source=str(self.path),
                                 fix=f"make it writable (chmod u+w {self.path}) or record into another file") from None
        return stored


def record(case_id: str | int, question: str = "", *, path: str | os.PathLike[str] = DEFAULT_PATH,
           **options: Any) -> CaseRecording:
    """Record one case into ``path``: ``with hoprag.record(case_id) as r: ...``; ``options`` as for
    :class:`Recorder` (one recorder per run is cheaper: it checks the file once)."""
    return Recorder(path, **options).case(case_id, question)


@dataclass
class CaseRecording:
    """The calls of one case (``r``): :meth:`retrieval`, :meth:`evidence`, :meth:`answer`.
    After the block, ``trace`` holds the trace as written."""

    recorder: Recorder
    case_id: str
    question: str = ""
    trace: Trace | None = None
    _steps: list[HopStep] = field(default_factory=list)
    _texts: dict[str, tuple[str, str]] = field(default_factory=dict)  # chunk id -> (text, title)
    _resolved: dict[tuple[str, str, str], tuple[str, str]] = field(default_factory=dict)  # hit -> (doc, chunk)
    _evidence: list[Evidence] | None = None
    _answer: Answer | None = None
    _start: float = 0.0
    _mark: float = 0.0

    def __enter__(self) -> CaseRecording:
        self._start = self._mark = time.perf_counter()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if kind is None:
            self.trace = self.recorder.write(self._trace())
        elif isinstance(exc, Exception) and not isinstance(exc, RecorderError):
            self.trace = self.recorder.write(self._trace(error=f"{kind.__name__}: {exc}"))
        return False  # the exception, if any, goes on

    # --- the calls ---------------------------------------------------------------------------------

    def retrieval(self, query: str, hits: Iterable[Any], *, bridge: str | Mapping[str, Any] | None = None,
                  hop: int | None = None, retriever: str = "", latency_ms: float | None = None) -> Any:
        """Record one retrieval call of ``query`` and its ranked ``hits``; returns ``hits`` as given
        (an iterator's hits as a list)."""
        now = time.perf_counter()
        given = as_list(hits, "hits")
        number = len(self._steps) + 1
        hop = hop if hop is not None else (self._steps[-1].hop + 1 if self._steps else 1)
        if not isinstance(hop, int) or isinstance(hop, bool) or hop < 1:
            raise RecorderError(f"hop {hop!r} is not a hop", field="hop", fix="number hops from 1, or leave hop out")
        records = [self._hit(item, rank, retriever) for rank, item in enumerate(given, start=1)]
        depends = tuple(s.step_id for s in self._steps if s.hop == hop - 1)
        spent = (now - self._mark) * 1000 if latency_ms is None else finite(latency_ms, "latency_ms")
        self._steps.append(HopStep(
            step_id=f"s{number}", hop=hop, sub_query=str(query), issued_query=str(query),
            hits=tuple(records), selected=tuple(h.chunk_id for h in records), depends_on=depends,
            bridge=_bridge(bridge), latency_ms=round(spent, 3), cumulative_ms=round((now - self._start) * 1000, 3),
        ))
        if not self.question:
            self.question = str(query)  # the first query stands for the question, as in the import
        self._mark = time.perf_counter()
        return hits if isinstance(hits, Sequence) else given  # a generator is spent: its hits as a list

    def evidence(self, hits: Iterable[Any]) -> None:
        """The context the answer was given (best first), if not every retrieved document."""
        out = []
        for rank, item in enumerate(as_list(hits, "evidence"), start=1):
            hit = self._hit(item, rank, "", retrieved=False)
            step = self._step_of(hit.chunk_id, hit.doc_id)
            text, title = self._texts.get(hit.chunk_id, ("", ""))
            out.append(Evidence(hit=hit, text=text, title=title or hit.title, hop=step.hop if step else 1,
                                step_id=step.step_id if step else "", sub_query=step.sub_query if step else ""))
        self._evidence = out

    def answer(self, text: str, citations: Iterable[Any] = (), *,
               claims: Iterable[tuple[str, Iterable[Any]]] | None = None, abstained: bool | None = None) -> None:
        """The answer's ``text``; ``citations`` make one claim of it, ``claims`` several."""
        if self._answer is not None:
            raise RecorderError(f"case {self.case_id!r} already has an answer", field="answer",
                                fix="call r.answer once per case (pass claims=[...] for several cited claims)")
        text = "" if text is None else str(text)
        cited = as_list(citations, "citations")
        pairs = list(claims) if claims is not None else ([(text, cited)] if cited else [])
        made = tuple(Claim(str(claim), tuple(self._citation(c) for c in as_list(cited, "citations")))
                     for claim, cited in pairs)
        self._answer = Answer(text=text, claims=made, abstained=not text.strip() if abstained is None else bool(abstained))
        self._mark = time.perf_counter()

    # --- building the trace ------------------------------------------------------------------------

    def _hit(self, item: Any, rank: int, retriever: str, *, retrieved: bool = True) -> Hit:
        """``item`` as a hit; ``retrieved=False`` (a citation, the evidence): a document a call of this
        case returned keeps its ids and is not counted again among the resolution routes."""
        found = read_hit(item, rank)
        key = (found.own_id, found.text, repr(sorted(found.metadata.items(), key=lambda kv: str(kv[0]))))
        known = None if retrieved else self._resolved.get(key)
        if known is not None:
            doc_id, chunk_id = known
        elif self.recorder.resolver is not None:
            resolved = self.recorder.resolver.resolve(RecordedDocument(found.own_id, found.text, dict(found.metadata)))
            doc_id, chunk_id = resolved.doc_id, resolved.chunk_id
        else:
            doc_id = chunk_id = hit_id(found, self.recorder.metadata_keys)
        self._resolved.setdefault(key, (doc_id, chunk_id))
        title = found.title or str(found.metadata.get("title") or "")
        if found.text and chunk_id not in self._texts:
            self._texts[chunk_id] = (found.text, title)
        score = 0.0 if found.score is None else finite(found.score, "score")
        return Hit(chunk_id=chunk_id, doc_id=doc_id, score=score, rank=rank, retriever=retriever, title=title)

    def _step_of(self, chunk_id: str, doc_id: str) -> HopStep | None:
        for key in (chunk_id, doc_id):
            for step in self._steps:
                if any(key in (h.chunk_id, h.doc_id) for h in step.hits):
                    return step
        return None

    def _citation(self, item: Any) -> Citation:
        hit = self._hit(item, 1, "", retrieved=False)
        for key in (hit.chunk_id, hit.doc_id):
            for step in self._steps:
                for logged in step.hits:
                    if key in (logged.chunk_id, logged.doc_id):
                        return Citation(logged.chunk_id, logged.doc_id, step.hop)
        return Citation(hit.chunk_id, hit.doc_id, 0)  # not retrieved: attribution reports it as unlogged

    def _default_evidence(self) -> list[Evidence]:
        out, seen = [], set()
        for step in self._steps:
            for hit in step.hits:
                if hit.chunk_id in seen:
                    continue
                seen.add(hit.chunk_id)
                text, title = self._texts.get(hit.chunk_id, ("", ""))
                out.append(Evidence(hit=hit, text=text, title=title or hit.title, hop=step.hop,
                                    step_id=step.step_id, sub_query=step.sub_query))
        return out

    def _trace(self, error: str | None = None) -> Trace:
        answer = self._answer or Answer(text="", abstained=True)
        if error is not None:
            stop = "error"
        else:
            stop = "answered" if answer.text.strip() and not answer.abstained else "no_answer"
        retrieval = sum(s.latency_ms for s in self._steps)
        return Trace(run_id=self.recorder.run_id, case_id=self.case_id, question=self.question,
                     steps=tuple(self._steps),
                     evidence=tuple(self._evidence if self._evidence is not None else self._default_evidence()),
                     answer=answer, stop_reason=stop, engine=self.recorder.engine, error=error,
                     latency_ms=round((time.perf_counter() - self._start) * 1000, 3),
                     timings={"retrieval_ms": round(retrieval, 3)})


def _new_run_id() -> str:
    return time.strftime("rec-%Y%m%dT%H%M%SZ-", time.gmtime()) + uuid.uuid4().hex[:6]


def _first_run_id(path: Path) -> str:
    """The run id of the header a traces file starts with ("" when it has none)."""
    for _, first in read_jsonl_dicts(path, "traces file"):
        return str(first.get("run_id") or "") if is_header(first) else ""
    return ""


def _bridge(value: str | Mapping[str, Any] | None) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    return {"value": str(value)} if str(value).strip() else {}


def _resolver(corpus: str | os.PathLike[str] | Iterable[Any], keys: Sequence[str]) -> DocumentResolver:
    if isinstance(corpus, (str, os.PathLike)):
        from hoprag.ingest.loaders import load_documents

        return DocumentResolver(load_documents(Path(corpus)), metadata_keys=keys, source=str(corpus))
    return DocumentResolver(corpus, metadata_keys=keys)
