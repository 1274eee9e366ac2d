"""2WikiMultihopQA (JSON arrays) to evidence-chain cases.

Supporting facts become sentence facts as in HotpotQA. An evidence triple ``[subject, relation,
object]`` whose subject and object both name supporting paragraphs is a hop: edges from the facts of
the subject's paragraph to the facts of the object's paragraph, ``bridge_field`` = relation,
``bridge_value`` = object. Triples ending in a value (a date, a country not among the paragraphs)
add no edge. Records without ``evidences`` (as in some redistributed copies) get no edges.

Answer aliases: the dataset's alias file (``id_aliases.json``: one ``{"Q_id", "aliases", "demonyms"}``
object per line) maps a record's ``answer_id`` to more gold strings; as in the official evaluator,
the case's gold strings become the answer plus that id's aliases and demonyms
(:func:`read_alias_file`, ``hoprag import 2wiki ... --aliases id_aliases.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hoprag.datasets.importers.common import (
    CaseDraft,
    ImportState,
    RecordRef,
    normalise,
    optional,
    read_json_records,
    title_variants,
    token_coverage,
)
from hoprag.datasets.importers.hotpotqa import read_sentence_record
from hoprag.errors import InputError
from hoprag.jsonl import read_jsonl_dicts

DATASET = "2wiki"


def read_alias_file(path: Path) -> dict[str, list[str]]:
    """``{Q_id: aliases + demonyms}`` from a 2WikiMultihopQA alias file (JSONL, ``id_aliases.json``)."""
    fix = 'give the dataset\'s id_aliases.json: one {"Q_id": ..., "aliases": [...], "demonyms": [...]} per line'
    out: dict[str, list[str]] = {}
    for line, obj in read_jsonl_dicts(path, "2wiki alias file", allow_empty=False):
        qid = obj.get("Q_id")
        if not isinstance(qid, str) or not qid:
            raise InputError("alias record has no 'Q_id' string", source=str(path), line=line, field="Q_id", fix=fix)
        names: list[str] = []
        for key in ("aliases", "demonyms"):
            values = obj.get(key) or []
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise InputError(f"'{key}' is not a list of strings", source=str(path), line=line, field=key, fix=fix)
            names.extend(values)
        out[qid] = list(dict.fromkeys([*out.get(qid, []), *names]))
    return out


def import_file(path: Path, state: ImportState, aliases: Mapping[str, list[str]] | None = None) -> None:
    for ref, record in read_json_records(path, DATASET):
        state.records += 1
        import_record(record, ref, state, aliases)


def import_record(
    record: dict[str, Any], ref: RecordRef, state: ImportState, aliases: Mapping[str, list[str]] | None = None
) -> None:
    evidences = optional(record, "evidences", list, ref, DATASET, None)
    answer_id = optional(record, "answer_id", str, ref, DATASET, None)
    parsed = read_sentence_record(record, ref, state, DATASET, {})
    if parsed is None:
        return
    draft, by_title = parsed.draft, parsed.by_title
    if answer_id is not None:
        draft.metadata["answer_id"] = answer_id
        if aliases is not None:
            draft.aliases = [a for a in dict.fromkeys(aliases.get(answer_id, [])) if a not in draft.answers]
    if evidences is None:
        if len(by_title) > 1:
            draft.warn("record has no 'evidences'; no edges derived")
    else:
        _evidence_edges(evidences, by_title, ref, draft)
    state.finish(draft)


def match_title(name: str, titles: list[str]) -> str | None:
    """The supporting title ``name`` refers to: exact (case-insensitive), else a unique normalised match."""
    exact = [t for t in titles if t.casefold() == name.casefold()]
    if exact:
        return exact[0]
    wanted = normalise(name)
    loose = [t for t in titles if wanted and wanted in title_variants(t)]
    return loose[0] if len(loose) == 1 else None


def assign_subjects(subjects: list[str], titles: list[str]) -> dict[str, str]:
    """Map each triple subject to the supporting paragraph it is about.

    Evidence subjects often differ from page titles ("Jarosław of Opole" for "Jarosław, Duke of
    Opole"; an original-language film name for its English page). Matching goes: exact or normalised
    title, then the largest share of the subject's words found in a free title, then, when exactly
    one subject and one title are left, the two are paired.
    """
    assigned: dict[str, str] = {}
    for subject in subjects:
        title = match_title(subject, titles)
        if title is not None and title not in assigned.values():
            assigned[subject] = title
    scored = sorted(
        (
            (-token_coverage(title, subject), i, subject, title)
            for i, subject in enumerate(subjects)
            if subject not in assigned
            for title in titles
            if token_coverage(title, subject) > 0
        ),
        key=lambda row: (row[0], row[1]),
    )
    for _, _, subject, title in scored:
        if subject not in assigned and title not in assigned.values():
            assigned[subject] = title
    left_subjects = [s for s in subjects if s not in assigned]
    left_titles = [t for t in titles if t not in assigned.values()]
    if len(left_subjects) == 1 and len(left_titles) == 1:
        assigned[left_subjects[0]] = left_titles[0]
    return assigned


def object_paragraph(obj: str, source: str, about: dict[str, str], titles: list[str]) -> str | None:
    """The supporting paragraph (other than ``source``) that a triple's object names, if any.

    Exact names first (a title, or the subject of another triple); otherwise the paragraph whose title
    or subject names cover the most of the object's words, more than half of them ("Nathan H. Juran"
    for "Nathan Juran"). Objects that are values (dates, countries not among the paragraphs) match none.
    """
    names: dict[str, set[str]] = {t: {t} for t in titles if t != source}
    for subject, title in about.items():
        if title in names:
            names[title].add(subject)
    for title, aliases in names.items():
        if any(a.casefold() == obj.casefold() for a in aliases):
            return title
    loose = match_title(obj, list(names))
    if loose is not None:
        return loose
    best, best_score = None, 0.0
    for title, aliases in names.items():
        score = max(token_coverage(a, obj) for a in aliases)
        if score > best_score:
            best, best_score = title, score
    return best if best_score > 0.5 else None


def _evidence_edges(
    evidences: list[Any], by_title: dict[str, list[str]], ref: RecordRef, draft: CaseDraft
) -> None:
    triples: list[tuple[str, str, str]] = []
    for i, triple in enumerate(evidences):
        if not (isinstance(triple, list) and len(triple) == 3 and all(isinstance(x, str) for x in triple)):
            raise ref.error(
                f"evidences[{i}] is not [subject, relation, object]",
                field="evidences",
                fix="give every evidence as three strings [subject, relation, object]",
            )
        triples.append((triple[0], triple[1], triple[2]))
    titles = list(by_title)
    subjects = list(dict.fromkeys(t[0] for t in triples))
    about = assign_subjects(subjects, titles)
    children: dict[str, set[str]] = {}
    for subject, relation, obj in triples:
        source = about.get(subject)
        target = None if source is None else object_paragraph(obj, source, about, titles)
        # A hop never leads back to a paragraph it came from (e.g. a spouse triple stated both ways).
        if source is None or target is None or _reaches(children, target, source):
            continue
        children.setdefault(source, set()).add(target)
        for from_fact in by_title[source]:
            for to_fact in by_title[target]:
                draft.add_edge(from_fact, to_fact, relation, obj)


def _reaches(children: dict[str, set[str]], start: str, goal: str) -> bool:
    stack, seen = [start], set()
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(children.get(node, ()))
    return False
