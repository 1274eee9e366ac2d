"""Supporting-passage recall and HotpotQA-style supporting-fact EM / F1.

These are the retrieval and attribution numbers multi-hop papers report; chain coverage
(:mod:`hoprag.evaluation.hops`) is stricter than both. With ``D_k`` the documents of the first k
evidence entries and, per valid chain, ``P(chain)`` = the distinct ``source_id`` of its facts
(its *supporting passages*)::

    passage_recall@k = max over chains of |P(chain) & D_k| / |P(chain)|
    all_passages@k   = 1 if some chain has P(chain) <= D_k else 0

Paragraph level: any entry from a supporting document counts, whatever part of it the entry holds,
so ``all_passages@k >= chain_coverage@k`` always (chain coverage needs the entries to overlap every
labelled span). A fact whose source the importer marked ``missing:`` is a passage never found.

Supporting facts (HotpotQA's ``sp_em`` / ``sp_f1``): the *predicted* facts are the sentences of the
evidence the answer cites (all of the trace's evidence when it cites none), cut with the chunker's
sentence splitter (:func:`hoprag.ingest.chunking.sentence_spans`) and placed in the document by the
entry's offsets; the *gold* facts are a valid chain's facts. A predicted sentence is a true positive
when it overlaps one of the chain's spans (same document), a gold fact is found when some predicted
sentence overlaps it::

    precision = |predicted sentences overlapping a gold span| / |predicted sentences|
    recall    = |gold facts overlapped| / |gold facts|
    sp_f1     = 2PR / (P + R)  (0 when P + R = 0);   sp_em = 1 if precision = recall = 1

maximised over valid chains (best F1, ties by EM). When hoprag's sentences coincide with the
benchmark's (as they do for HotpotQA and 2Wiki paragraphs), this is exactly HotpotQA's ``update_sp``
over ``(title, sentence id)`` pairs. Evidence without offsets (document-level pipelines) cannot be cut
into located sentences: the case is then not applicable (``None``) rather than guessed. An abstaining
answer predicts nothing (EM = F1 = 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hoprag.datasets.schema import Case, Fact
from hoprag.evaluation.hops import recall_many
from hoprag.evaluation.matching import MISSING_SOURCE_PREFIX, overlaps
from hoprag.evaluation.measures.cases import Measure
from hoprag.evaluation.memo import memoized
from hoprag.ingest.chunking import sentence_spans
from hoprag.records import Evidence, Trace
from hoprag.security.redaction import source_length, source_offset

Sentence = tuple[str, int, int]  # (doc_id, start, end)


def _require_k(k: int | None, name: str) -> int:
    if k is None or k < 1:
        raise ValueError(f"{name} needs a cutoff k >= 1, got {k!r}")
    return k


def has_chains(case: Case) -> bool:
    return any(chain for chain in case.valid_chains)


def supporting_passages(case: Case) -> list[set[str]]:
    """Per valid chain, the distinct source documents of its facts; shared within an evaluation (six
    measures ask), so callers must not mutate it."""
    return memoized("supporting_passages", (case,),
                    lambda: [{case.facts[f].source_id for f in chain} for chain in case.valid_chains if chain])


def _found_docs(trace: Trace, k: int) -> set[str]:
    return {e.hit.doc_id for e in trace.evidence[:k] if not e.hit.doc_id.startswith(MISSING_SOURCE_PREFIX)}


def passage_recall(case: Case, trace: Trace, k: int | None) -> float | None:
    """Best share, over valid chains, of the chain's supporting documents among the first k entries."""
    k = _require_k(k, "passage_recall")
    gold = supporting_passages(case)
    if not gold:
        return None
    found = _found_docs(trace, k)
    return max(len(p & found) / len(p) for p in gold)


def all_passages(case: Case, trace: Trace, k: int | None) -> float | None:
    """1.0 when every supporting document of some valid chain is among the first k entries."""
    k = _require_k(k, "all_passages")
    gold = supporting_passages(case)
    if not gold:
        return None
    found = _found_docs(trace, k)
    return float(any(p <= found for p in gold))


def _first_positions(trace: Trace) -> dict[str, int]:
    """Each found document's first position (1-based) among the evidence entries."""
    first: dict[str, int] = {}
    for position, entry in enumerate(trace.evidence, start=1):
        doc = entry.hit.doc_id
        if doc not in first and not doc.startswith(MISSING_SOURCE_PREFIX):
            first[doc] = position
    return first


def passage_recall_many(case: Case, trace: Trace, ks: Sequence[int]) -> list[float | None]:
    """:func:`passage_recall` at each k of ``ks`` (documents for facts, first positions for covers)."""
    return recall_many(supporting_passages(case), _first_positions(trace), ks)


def all_passages_many(case: Case, trace: Trace, ks: Sequence[int]) -> list[float | None]:
    """:func:`all_passages` at each k of ``ks``: some chain's every document is within the first k."""
    gold = supporting_passages(case)
    if not gold:
        return [None] * len(ks)
    first = _first_positions(trace)
    need = min(max(first.get(doc, math.inf) for doc in passages) for passages in gold)
    return [float(need <= k) for k in ks]


def predicted_evidence(trace: Trace) -> list[Evidence]:
    """The evidence the answer cites, in citation order; all evidence when it cites none."""
    by_chunk = {e.hit.chunk_id: e for e in trace.evidence}
    cited: dict[str, Evidence] = {}
    for claim in trace.answer.claims:
        for citation in claim.citations:
            entry = by_chunk.get(citation.chunk_id)
            if entry is not None:
                cited.setdefault(entry.hit.chunk_id, entry)
    return list(cited.values()) if cited else list(trace.evidence)


def predicted_sentences(trace: Trace) -> list[Sentence] | None:
    """Located sentences of the predicted evidence (deduplicated); ``None`` when an entry has no offsets."""
    if trace.answer.abstained:
        return []
    out: dict[Sentence, None] = {}
    for entry in predicted_evidence(trace):
        start, end = entry.hit.start, entry.hit.end
        if start is None or end is None:
            return None
        # a redacted text is shorter or longer than its source: cut it, then place the cuts in the source
        pieces = sentence_spans(entry.text) if entry.text and source_length(trace, entry) == end - start else []
        if not pieces:
            out[(entry.hit.doc_id, start, end)] = None
        for a, b in pieces:
            a, b = source_offset(trace, entry.chunk_id, a), source_offset(trace, entry.chunk_id, b)
            out[(entry.hit.doc_id, start + a, start + b)] = None
    return list(out)


def _chain_scores(case: Case, chain: list[str], predicted: list[Sentence]) -> tuple[float, float]:
    """``(f1, em)`` of the predicted sentences against one chain's facts."""
    facts = [case.facts[f] for f in chain]

    def hits(sentence: Sentence, fact: Fact) -> bool:
        doc, a, b = sentence
        if fact.source_id != doc or not fact.spans:
            return False
        return any(overlaps(a, b, span) for span in fact.spans)

    matrix = [[hits(s, fact) for fact in facts] for s in predicted]  # sentence x fact
    true_pos = sum(1 for row in matrix if any(row))
    found = sum(1 for i in range(len(facts)) if any(row[i] for row in matrix))
    precision = true_pos / len(predicted) if predicted else 0.0
    recall = found / len(facts) if facts else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return f1, float(precision == 1.0 and recall == 1.0)


def _best(case: Case, trace: Trace) -> tuple[float, float] | None:
    def compute() -> tuple[float, float] | None:  # shared by sp_em and sp_f1
        predicted = predicted_sentences(trace)
        if predicted is None:
            return None
        return max(_chain_scores(case, chain, predicted) for chain in case.valid_chains if chain)

    return memoized("support_best", (case, trace), compute)


def sp_f1(case: Case, trace: Trace, k: int | None = None) -> float | None:
    """Supporting-fact F1 (see the module doc); ``None`` for evidence without offsets."""
    best = _best(case, trace)
    return None if best is None else best[0]


def sp_em(case: Case, trace: Trace, k: int | None = None) -> float | None:
    """Supporting-fact exact match: the predicted sentences are exactly some chain's facts."""
    best = _best(case, trace)
    return None if best is None else best[1]


PassageRecall = Measure("passage_recall", passage_recall, applies=has_chains, many=passage_recall_many)
AllPassages = Measure("all_passages", all_passages, applies=has_chains, many=all_passages_many)
SupportEM = Measure("sp_em", sp_em, applies=has_chains)
SupportF1 = Measure("sp_f1", sp_f1, applies=has_chains)
