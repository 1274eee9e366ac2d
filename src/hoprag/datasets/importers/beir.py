"""BEIR folders (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) to single-hop cases.

Documents keep their BEIR ``_id``. Every query with at least one qrels row of score > 0 becomes a
case with one whole-document fact per relevant document (``grade`` = qrels score); any one of them
suffices, so each is its own valid chain. Queries without a positive judgement are counted as
skipped (the queries file usually holds every split, the qrels file one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hoprag.datasets.importers.common import CaseDraft, ImportState, RecordRef
from hoprag.errors import InputError
from hoprag.files import open_text
from hoprag.jsonl import read_jsonl_dicts
from hoprag.records import Document

DATASET = "beir"
_SPLITS = ("test", "dev")
_FIX_LAYOUT = (
    "give a BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv or qrels/dev.tsv) or those files "
    "by name: *corpus*.jsonl, *queries*.jsonl and a .tsv qrels file"
)


@dataclass
class _Group:
    name: str
    corpus: Path | None = None
    queries: Path | None = None
    qrels: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class _Files:
    name: str
    corpus: Path
    queries: Path
    qrels: list[Path]


def import_files(paths: list[Path], state: ImportState) -> None:
    for files in _groups(paths, state):
        _import_group(files, state)


def _groups(paths: list[Path], state: ImportState) -> list[_Files]:
    groups: list[_Group] = []
    loose = _Group(name="files")
    for path in paths:
        if path.is_dir():
            group = _Group(name=str(path), corpus=path / "corpus.jsonl", queries=path / "queries.jsonl")
            splits = [path / "qrels" / f"{s}.tsv" for s in _SPLITS if (path / "qrels" / f"{s}.tsv").is_file()]
            if not splits:
                raise InputError(
                    "BEIR folder has no qrels/test.tsv or qrels/dev.tsv", source=str(path), fix=_FIX_LAYOUT
                )
            if len(splits) > 1:
                used, ignored = (s.relative_to(path) for s in splits)
                state.warn(f"{path}: using {used}; {ignored} ignored")
            group.qrels = splits[:1]
            groups.append(group)
        elif not path.is_file():
            raise InputError("BEIR file or folder not found", source=str(path), fix="check the path")
        elif path.suffix == ".tsv":
            loose.qrels.append(path)
        elif "corpus" in path.name and loose.corpus is None:
            loose.corpus = path
        elif "queries" in path.name and loose.queries is None:
            loose.queries = path
        else:
            raise InputError(
                "cannot tell which BEIR file this is, or it is given twice", source=str(path), fix=_FIX_LAYOUT
            )
    if loose.corpus or loose.queries or loose.qrels:
        groups.append(loose)
    checked: list[_Files] = []
    for group in groups:
        for label, path in (("corpus", group.corpus), ("queries", group.queries)):
            if path is None or not path.is_file():
                where = str(path or group.name)
                raise InputError(f"BEIR {label} file missing", source=where, fix=_FIX_LAYOUT)
        if not group.qrels or group.corpus is None or group.queries is None:
            raise InputError("BEIR qrels file missing", source=group.name, fix=_FIX_LAYOUT)
        checked.append(_Files(group.name, group.corpus, group.queries, group.qrels))
    return checked


def _import_group(group: _Files, state: ImportState) -> None:
    docs = _read_corpus(group.corpus, state)
    queries = _read_queries(group.queries)
    qrels: dict[str, list[tuple[str, int]]] = {}
    for path in group.qrels:
        for qid, cid, score in _read_qrels(path):
            if score > 0:
                qrels.setdefault(qid, []).append((cid, score))
    unknown = [q for q in qrels if q not in queries]
    if unknown:
        state.warn(
            f"{group.name}: {len(unknown)} qrels query id(s) not in {group.queries.name} "
            f"(e.g. {unknown[0]!r}); not imported"
        )
    without = 0
    for qid, (ref, text) in queries.items():
        state.records += 1
        if qid not in qrels:
            without += 1
            continue
        if not state.claim_id(qid, ref):
            continue
        _case(qid, text, ref, qrels[qid], docs, state)
    if without:
        state.skipped += without
        state.warn(f"{group.queries}: {without} queries have no qrels with score > 0; not imported as cases")


def _case(
    qid: str,
    text: str,
    ref: RecordRef,
    judged: list[tuple[str, int]],
    docs: dict[str, Document],
    state: ImportState,
) -> None:
    draft = CaseDraft(
        case_id=qid, query=text, ref=ref, question_type="single-hop", metadata={"original_id": qid}
    )
    grades: dict[str, int] = {}
    for cid, score in judged:
        doc = docs.get(cid)
        if doc is None:
            fact_id = f"missing:{cid}"
            draft.warn(f"qrels names corpus id {cid!r}, which is not in the corpus; {fact_id} has no span")
            draft.facts[fact_id] = {"source_id": fact_id, "spans": [], "entities": [], "title": None}
        else:
            fact_id = f"{doc.id}:doc"
            span = {"start": 0, "end": len(doc.text), "text": doc.text}
            entities = [doc.title] if doc.title else []
            draft.facts[fact_id] = {
                "source_id": doc.id, "spans": [span], "entities": entities, "title": doc.title or None
            }
            draft.entities.extend(entities)
        grades[fact_id] = max(score, grades.get(fact_id, 0))
    draft.chains = [[f] for f in draft.facts]
    state.finish(draft, grades)


def _read_corpus(path: Path, state: ImportState) -> dict[str, Document]:
    """BEIR ``_id`` -> stored document (a duplicate of earlier text maps to the earlier document)."""
    docs: dict[str, Document] = {}
    for line, obj in read_jsonl_dicts(path, "BEIR corpus file"):
        cid, text = obj.get("_id"), obj.get("text")
        if cid is None or not isinstance(text, str):
            missing = "_id" if cid is None else "text"
            raise InputError(
                "corpus entry lacks a required field",
                source=str(path),
                line=line,
                field=missing,
                fix='give every corpus line as {"_id": ..., "title": ..., "text": ...}',
            )
        cid = str(cid)
        if cid in docs:
            raise InputError(
                f"duplicate corpus _id {cid!r}",
                source=str(path),
                line=line,
                field="_id",
                fix="give every corpus document a unique _id",
            )
        title = obj.get("title")
        doc = Document(id=cid, title=title if isinstance(title, str) else "", text=text, source=state.dataset)
        docs[cid] = state.builder.add(doc)
    if not docs:
        raise InputError("BEIR corpus has no documents", source=str(path), fix=_FIX_LAYOUT)
    return docs


def _read_queries(path: Path) -> dict[str, tuple[RecordRef, str]]:
    queries: dict[str, tuple[RecordRef, str]] = {}
    for number, (line, obj) in enumerate(read_jsonl_dicts(path, "BEIR queries file"), start=1):
        qid, text = obj.get("_id"), obj.get("text")
        if qid is None or not isinstance(text, str):
            missing = "_id" if qid is None else "text"
            raise InputError(
                "query lacks a required field",
                source=str(path),
                line=line,
                field=missing,
                fix='give every query line as {"_id": ..., "text": ...}',
            )
        if str(qid) in queries:
            raise InputError(
                f"duplicate query _id {qid!r}",
                source=str(path),
                line=line,
                field="_id",
                fix="give every query a unique _id",
            )
        queries[str(qid)] = (RecordRef(path, number, line), text)
    if not queries:
        raise InputError("BEIR queries file has no queries", source=str(path), fix=_FIX_LAYOUT)
    return queries


def _read_qrels(path: Path) -> list[tuple[str, str, int]]:
    fix = "give qrels as tab-separated lines query-id<TAB>corpus-id<TAB>integer score (header optional)"
    rows: list[tuple[str, str, int]] = []
    with open_text(path, "BEIR qrels file") as lines:
        # Columns split on tabs alone, as csv with QUOTE_NONE did, without its field-size limit.
        for line, raw in enumerate(lines, start=1):
            row = raw.rstrip("\r\n").split("\t")
            if not "".join(row).strip():
                continue
            if len(row) != 3:
                raise InputError(
                    f"expected 3 tab-separated columns, got {len(row)}", source=str(path), line=line, fix=fix
                )
            qid, cid, score = (c.strip() for c in row)
            grade = _int(score)
            if line == 1 and grade is None:
                continue  # the "query-id corpus-id score" header
            if grade is None:
                raise InputError(
                    f"score {score[:40]!r} is not an integer", source=str(path), line=line, field="score", fix=fix
                )
            rows.append((qid, cid, grade))
    if not rows:
        raise InputError("qrels file has no judgements", source=str(path), fix=fix)
    return rows


def _int(text: str) -> int | None:
    """``text`` as an integer grade, or None (``str.isdigit`` is true of "²", which ``int`` refuses)."""
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
        return None
    return int(text)
