"""Access control: clearance levels, and which documents a caller at a clearance may see.

Documents carry an ``acl`` class (the enterprise corpus: ``public``, ``internal``, ``restricted``).
A :class:`ClearancePolicy` orders the classes low → high; a caller at clearance ``c`` may see a
document whose class ranks at or below ``c``. Two rules fail closed:

- a document with no class gets the policy's ``unlabelled`` level (default: the level just above
  the lowest, so an unlabelled document is hidden from a public caller);
- a class the policy does not list ranks as the highest level (a typo never widens access).

Retrievers apply the policy *inside* retrieval, before top-k, so a caller still gets k allowed hits;
engines also answer from a view of the corpus that holds only the documents the caller may see
(:func:`visible_corpus`), so bridges, term weights and rendering never read anything above it.

Which clearance a caller has (flag, environment, default; refusing empty values, unknown levels and
levels that miss a class of the index) is decided in one place, :mod:`hoprag.security.clearance`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hoprag.errors import ConfigError
from hoprag.records import Chunk, Document

__all__ = [
    "DEFAULT_LEVELS",
    "Clearance",
    "ClearancePolicy",
    "LeakDetector",
    "acl_counts",
    "parse_levels",
    "visible_corpus",
]

DEFAULT_LEVELS: tuple[str, ...] = ("public", "internal", "confidential", "restricted")


def _norm(value: str) -> str:
    return str(value).strip().lower()


@dataclass(frozen=True)
class ClearancePolicy:
    """Ordered clearance levels (low → high) and the level of a document without a class.

    ``unlabelled=None`` means the level just above the lowest (the lowest when there is one level).
    Level names are compared case-insensitively and without surrounding spaces.
    """

    levels: tuple[str, ...] = DEFAULT_LEVELS
    unlabelled: str | None = None

    def __post_init__(self) -> None:
        levels = tuple(_norm(level) for level in self.levels)
        if not levels or any(not level for level in levels):
            raise ConfigError(
                f"clearance levels {tuple(self.levels)!r} must be one or more non-empty names, lowest first "
                "(e.g. --acl-levels public,internal,confidential,restricted)"
            )
        if len(set(levels)) != len(levels):
            raise ConfigError(f"clearance levels {levels!r} repeat a name; give each level once, lowest first")
        unlabelled = levels[min(1, len(levels) - 1)] if self.unlabelled is None else _norm(self.unlabelled)
        if unlabelled not in levels:
            raise ConfigError(
                f"unlabelled level '{self.unlabelled}' is not a clearance level; valid: {', '.join(levels)}"
            )
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "unlabelled", unlabelled)

    @property
    def highest(self) -> str:
        return self.levels[-1]

    def parse(self, clearance: str) -> str:
        """The level named by ``clearance``; :class:`ConfigError` naming the valid levels otherwise."""
        level = _norm(clearance)
        if level not in self.levels:
            raise ConfigError(
                f"unknown clearance '{clearance}'; valid (lowest first): {', '.join(self.levels)}. "
                "Fix: pass --clearance with one of them (or --acl-levels to define other levels)"
            )
        return level

    def level_of(self, doc_acl: str) -> str:
        """The level a document's ``acl`` class counts as (unlabelled and unknown classes fail closed)."""
        label = _norm(doc_acl or "")
        if not label:
            return str(self.unlabelled)
        return label if label in self.levels else self.highest

    def rank(self, doc_acl: str) -> int:
        """0-based rank of a document's class (see :meth:`level_of`)."""
        return self.levels.index(self.level_of(doc_acl))

    def allows(self, clearance: str, doc_acl: str) -> bool:
        """Whether a caller at ``clearance`` may see a document of class ``doc_acl``."""
        return self.rank(doc_acl) <= self.levels.index(self.parse(clearance))

    def allowed_classes(self, clearance: str) -> tuple[str, ...]:
        """The levels a caller at ``clearance`` may see, lowest first."""
        return self.levels[: self.levels.index(self.parse(clearance)) + 1]

    def clearance(self, level: str) -> Clearance:
        """A validated clearance under this policy, to hand to retrievers and engines."""
        return Clearance(self.parse(level), self)


@dataclass(frozen=True)
class Clearance:
    """A caller's clearance level under one policy (build it with :meth:`ClearancePolicy.clearance`)."""

    level: str
    policy: ClearancePolicy = ClearancePolicy()

    def __post_init__(self) -> None:
        object.__setattr__(self, "level", self.policy.parse(self.level))

    @property
    def rank(self) -> int:
        return self.policy.levels.index(self.level)

    def allows(self, doc_acl: str) -> bool:
        return self.policy.rank(doc_acl) <= self.rank

    def describe(self) -> str:
        """``internal`` under the default levels, ``internal of a<b<c`` under others (for hashes and traces)."""
        if self.policy == ClearancePolicy():
            return self.level
        return f"{self.level} of {'<'.join(self.policy.levels)} (unlabelled={self.policy.unlabelled})"


def parse_levels(text: str, *, unlabelled: str | None = None) -> ClearancePolicy:
    """A policy from ``"public,internal,restricted"`` (lowest first), as ``--acl-levels`` takes it."""
    levels = tuple(part for part in (p.strip() for p in str(text).split(",")) if part)
    return ClearancePolicy(levels=levels, unlabelled=unlabelled)


def visible_corpus(
    chunks: Mapping[str, Chunk], documents: Mapping[str, Document], clearance: Clearance | None
) -> tuple[Mapping[str, Chunk], Mapping[str, Document]]:
    """The chunks and documents a caller at ``clearance`` may see (everything for ``None``).

    A chunk whose document is unknown counts as the highest level, like an unknown class.
    """
    if clearance is None:
        return chunks, documents
    if hasattr(chunks, "visible") and hasattr(documents, "visible"):  # a loaded index: masks, not copies
        return chunks.visible(clearance.allows), documents.visible(clearance.allows)
    docs = {doc_id: d for doc_id, d in documents.items() if clearance.allows(d.acl)}
    top = clearance.rank == len(clearance.policy.levels) - 1
    kept = {cid: c for cid, c in chunks.items() if c.doc_id in docs or (top and c.doc_id not in documents)}
    return kept, docs


def acl_counts(documents: Iterable[Document]) -> dict[str, int]:
    """Documents per ``acl`` class as written in the corpus (``""`` = no class), sorted by class."""
    counts: dict[str, int] = {}
    for doc in documents:
        counts[doc.acl] = counts.get(doc.acl, 0) + 1
    return dict(sorted(counts.items()))


class LeakDetector:
    """Finds what a caller at ``clearance`` must not see in any output: documents above it.

    A document above the clearance shows by its id, its title, or any ``window`` characters of its
    text (whitespace folded, so wrapped or flattened renderings still match). Titles and windows that
    a visible document also contains are not evidence of a leak, and are left out.
    """

    def __init__(self, documents: Iterable[Document], clearance: Clearance, *, window: int = 40) -> None:
        docs = list(documents)
        hidden = [d for d in docs if not clearance.allows(d.acl)]
        visible = [_fold_space(d.title + " " + d.text) for d in docs if clearance.allows(d.acl)]
        self.window = window
        self.hidden_ids = frozenset(d.id for d in hidden)
        shared = {w for text in visible for w in _windows(text, window)}
        self._windows: dict[str, str] = {}
        for d in hidden:
            for w in _windows(_fold_space(d.text), window):
                if w not in shared:
                    self._windows.setdefault(w, d.id)
        self._titles = {
            t: d.id for d in hidden if len(t := _fold_space(d.title)) >= 8 and not any(t in v for v in visible)
        }
        ids = sorted(self.hidden_ids, key=len, reverse=True)
        self._seen: dict[str, frozenset[str]] = {}
        self._ids = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, ids)) + r")(?![\w-])") if ids else None

    def find(self, text: str) -> set[str]:
        """Ids of the hidden documents that ``text`` shows."""
        known = self._seen.get(text)
        if known is None:
            flat = _fold_space(text)
            found = set(self._ids.findall(flat)) if self._ids is not None else set()
            found.update(doc_id for title, doc_id in self._titles.items() if title in flat)
            windows = self._windows
            found.update(windows[w] for w in _windows(flat, self.window) if w in windows)
            known = frozenset(found)
            if len(self._seen) >= _SEEN_LIMIT:
                self._seen.clear()
            self._seen[text] = known  # outputs repeat the same passages, titles and queries
        return set(known)

    def find_in(self, value: Any) -> set[str]:
        """:meth:`find` over every string (keys and values) of nested dicts, lists and tuples."""
        found: set[str] = set()
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                found |= self.find(item)
            elif isinstance(item, Mapping):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, (list, tuple, set, frozenset)):
                stack.extend(item)
        return found


_SEEN_LIMIT = 50_000


def _fold_space(text: str) -> str:
    return " ".join(str(text).split())


def _windows(text: str, size: int) -> Iterable[str]:
    return (text[i : i + size] for i in range(max(len(text) - size + 1, 0)))
