"""Is the oracle-hop run at least as good as the free-running one at hop 2, and where it is not, why.

Conditional (oracle-seeded) hop-2 recall@k should not fall below free-running hop-2 recall@k; each
case where it does is explained from both traces (the free run's first retrieval already held the
layer-2 fact, the oracle run stopped earlier, or it spent its branches on other bridges).
:func:`hoprag.evaluation.ablations.run_ablations` reports this beside the ablation table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hoprag.datasets.schema import Case
from hoprag.evaluation.matching import covered_facts
from hoprag.evaluation.paths import layer_recall, layer_sets
from hoprag.records import Trace

__all__ = ["oracle_check"]


def oracle_check(cases: Sequence[Case], free: Sequence[Trace], oracle: Sequence[Trace], *, k: int = 10) -> dict[str, Any]:
    """Conditional (oracle-hop) vs free-running hop-2 recall@k, with every case where oracle < free explained."""
    free_by = {t.case_id: t for t in free}
    oracle_by = {t.case_id: t for t in oracle}
    pairs, worse = [], []
    for case in cases:
        if not layer_sets(case, 2) or case.case_id not in free_by or case.case_id not in oracle_by:
            continue
        f = layer_recall(case, free_by[case.case_id], k, layer=2) or 0.0
        o = layer_recall(case, oracle_by[case.case_id], k, layer=2) or 0.0
        pairs.append((f, o))
        if o < f:
            worse.append({"case_id": case.case_id, "free": f, "oracle": o, "why": _why_worse(case, free_by[case.case_id], oracle_by[case.case_id], k)})
    n = len(pairs)
    mean_f = sum(p[0] for p in pairs) / n if n else None
    mean_o = sum(p[1] for p in pairs) / n if n else None
    return {"k": k, "cases": n, "free_hop2_recall": mean_f, "oracle_hop2_recall": mean_o,
            "gap": None if n == 0 else mean_o - mean_f, "holds": n == 0 or mean_o >= mean_f, "oracle_worse": worse}


def _why_worse(case: Case, free: Trace, oracle: Trace, k: int) -> str:
    """Read both traces to say why the oracle-seeded run lost a layer-2 fact the free run found."""
    targets = set().union(*layer_sets(case, 2))
    first = [h for s in free.steps if s.hop == 1 for h in sorted(s.hits, key=lambda h: h.rank)[:k]]
    if covered_facts(case, first) & targets:
        return ("the free run's hop-1 question retrieval already returned a layer-2 fact; the oracle replaces that "
                "call with the gold layer-1 chunks, so the fact must be found again through a bridge")
    finder = next((s for s in free.steps if covered_facts(case, sorted(s.hits, key=lambda h: h.rank)[:k]) & targets), None)
    free_hops = max((s.hop for s in free.steps), default=0)
    oracle_hops = max((s.hop for s in oracle.steps), default=0)
    if finder is not None and finder.hop > oracle_hops:
        return (f"the oracle run stopped after hop {oracle_hops} ({oracle.stop_reason}); the free run found the "
                f"layer-2 fact at hop {finder.hop} of {free_hops}, a hop the oracle run never made")
    if finder is not None and finder.bridge.get("value"):
        issued = {str(s.bridge.get("value")) for s in oracle.steps if s.bridge.get("value")}
        if finder.bridge["value"] not in issued:
            return (f"the free run reached the layer-2 fact through the bridge {finder.bridge['value']!r}; the oracle "
                    "run, whose frontier starts with the gold chunks, spent its branch cap on other bridges")
    return "the oracle run retrieved the layer-2 fact's document below the cut-off k, or not at all (see both traces)"
