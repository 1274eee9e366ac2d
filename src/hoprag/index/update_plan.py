"""What an update of an index changes, decided the same way for every store: the ``--delete`` file read,
each given document classed as added, replaced or unchanged against the stored version.

The corpus order after an update — the order a rebuild of the same documents must be given to
produce the same index — is: the documents the index kept, in their order, then the added and
replaced ones in the order the update gave them. A replaced document is removed from its place and
appended, as a log appends a newer version; a document given again unchanged stays where it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hoprag.errors import InputError
from hoprag.files import read_text
from hoprag.finite_numbers import loads
from hoprag.index.corpus_db import canonical_record
from hoprag.records import Document

__all__ = ["UpdatePlan", "plan_update", "read_delete_ids"]

_LOOKUP = 500  # ids looked up in the store at a time


@dataclass(frozen=True)
class UpdatePlan:
    """The ids leaving their place (``deleted`` and ``replaced``) and the documents appended (``fresh``:
    added and replaced, in the order given, each with its canonical record)."""

    fresh: tuple[tuple[Document, str], ...]
    deleted: frozenset[str]
    replaced: frozenset[str]
    added: int
    unchanged: int
    removed: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "removed", self.deleted | self.replaced)

    @property
    def changes(self) -> bool:
        return bool(self.fresh or self.deleted)


def read_delete_ids(path: str | Path) -> list[str]:
    """The ids a ``--delete`` file names: one per line, or JSON Lines whose objects have ``id``; blank
    lines and lines starting with ``#`` are skipped."""
    source = str(path)
    text = read_text(Path(path), "delete list")
    ids: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        value = line.strip()
        if not value or value.startswith("#"):
            continue
        if value.startswith("{"):
            try:
                record = loads(value)  # the one number rule: NaN and 1e400 are refused here too
            except ValueError as exc:
                raise InputError(f"not a JSON object ({exc.args[0]})", source=source, line=number,
                                 fix="write one document id per line, or one JSON object with an 'id' per line") from None
            doc_id = record.get("id") if isinstance(record, dict) else None
            if not isinstance(doc_id, str) or not doc_id:
                raise InputError("the JSON object has no string 'id'", source=source, line=number, field="id",
                                 fix="give each line an 'id' naming a document of the index")
            value = doc_id
        if value in seen:
            raise InputError(f"document id '{value}' is listed twice (lines {seen[value]} and {number})",
                             source=source, line=number, fix="list each id to delete once")
        seen[value] = number
        ids.append(value)
    return ids


def plan_update(
    documents: Iterable[Document],
    deletes: Sequence[str],
    stored: Callable[[Sequence[str]], dict[str, str]],
    *,
    delete_source: str = "--delete",
) -> UpdatePlan:
    """Class every given document against ``stored(ids)`` (id -> stored canonical record, for the ids the
    index holds) and check the deletions: an id to delete must be in the index and not also given."""
    given: list[tuple[Document, str]] = []
    for doc in documents:
        given.append((doc, canonical_record(doc)))
    known: dict[str, str] = {}
    ids = [doc.id for doc, _ in given] + list(deletes)
    for lo in range(0, len(ids), _LOOKUP):
        known.update(stored(ids[lo : lo + _LOOKUP]))
    deleting = frozenset(deletes)
    missing = [i for i in deletes if i not in known]
    if missing:
        shown = ", ".join(f"'{i}'" for i in missing[:3]) + (", …" if len(missing) > 3 else "")
        raise InputError(f"{len(missing)} id(s) to delete are not in the index: {shown}", source=delete_source,
                         fix="remove them from the list (check the ids against the index's documents)")
    both = [doc.id for doc, _ in given if doc.id in deleting]
    if both:
        raise InputError(f"document '{both[0]}' is both given and listed for deletion", source=delete_source,
                         fix="give a new version to replace a document, or list its id to delete it, not both")
    fresh, replaced, added, unchanged = [], set(), 0, 0
    for doc, record in given:
        before = known.get(doc.id)
        if before == record:
            unchanged += 1
            continue
        fresh.append((doc, record))
        if before is None:
            added += 1
        else:
            replaced.add(doc.id)
    return UpdatePlan(fresh=tuple(fresh), deleted=deleting, replaced=frozenset(replaced), added=added,
                      unchanged=unchanged)
