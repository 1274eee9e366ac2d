"""The offline multi-hop engine: retrieve, extract bridges, issue conditioned queries, fuse, stop.

Deterministic and model-free. Hop 1 retrieves with the question and keeps its best hits. From each
kept item the engine extracts bridge candidates (entities, titles, identifiers, dates the question
does not name) and issues one conditioned query per bridge, ``"<bridge> <question>"``, excluding what
it already holds. New hits join the buffer and become the frontier of the next hop.

It stops for one of these reasons, recorded in the trace:
``max_hops`` (the cap was reached), ``no_new_evidence`` (a hop returned only held chunks),
``loop_detected`` (most of a hop's top hits were already held, or its queries repeat earlier ones),
``no_bridge`` (nothing left to follow), ``no_evidence`` (hop 1 found nothing).

The final context is ordered by fused relevance: reciprocal-rank fusion over the question's list and
every conditioned list, so a passage reached from several bridges, or by the question and a bridge,
ranks above one reached once. Evidence is ordered by relevance, not by the hop that found it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dataclasses import replace

from hoprag.pipeline.chains import Branch, TermWeights, order_by_chains, question_coverage
from hoprag.pipeline.bridges import BridgeCandidate, extract_bridges, title_key
from hoprag.pipeline.engine import MultiHopConfig, Retrieves, _confidence, _evidence, _StepClock, config_hash
from hoprag.pipeline.extractive import extract_answer
from hoprag.pipeline.text import Analyzer, fold
from hoprag.errors import ConfigError
from hoprag.records import Chunk, Document, Evidence, Hit, HopStep, Trace


class MultiHopEngine:
    """Offline iterative retrieval with bridge-conditioned hops."""

    name = "multihop"

    def __init__(
        self,
        retriever: Retrieves,
        chunks: Mapping[str, Chunk],
        documents: Mapping[str, Document],
        config: MultiHopConfig | None = None,
    ) -> None:
        self.retriever = retriever
        self.chunks = chunks
        self.documents = documents
        self.config = config or MultiHopConfig()
        self.config_hash = config_hash(self.config, self.name)
        self._titles: frozenset[str] | None = None
        self.analyze = Analyzer()
        texts = {cid: _title_of(c, documents) + "\n" + c.text for cid, c in chunks.items()}
        self.term_weights = TermWeights(texts, self.analyze)

    @property
    def known_titles(self) -> frozenset[str]:
        """Title keys of every document, built once: bridges that name a document are preferred."""
        if self._titles is None:
            self._titles = frozenset(title_key(d.title) for d in self.documents.values() if d.title)
        return self._titles

    # -- one question ---------------------------------------------------------------------------

    def answer(
        self, question: str, *, case_id: str = "", run_id: str = "", seed_chunks: Sequence[str] = ()
    ) -> Trace:
        """Answer ``question``. ``seed_chunks`` replaces hop 1 with given chunks (the oracle-hop
        ablation: the correct prior evidence is supplied and every later hop runs unchanged)."""
        cfg = self.config
        clock = _StepClock()
        steps: list[HopStep] = []
        held: dict[str, Evidence] = {}
        issued: set[str] = {fold(question)}
        used_bridges: set[str] = set()

        if seed_chunks:
            hits = self._seed_hits(seed_chunks)
            first = self._step("s1", 1, question, "", hits, hits, (), {"oracle": True}, clock)
        else:
            hits = self.retriever.retrieve(question, cfg.k)
            first = self._step("s1", 1, question, question, hits, hits[: cfg.keep_first_hop], (), {}, clock)
        steps.append(first)
        frontier = self._hold(first, held)
        stop = "no_evidence" if not hits else ""

        hop = 1
        while not stop:
            if hop >= cfg.max_hops:
                stop = "max_hops"
                break
            hop += 1
            branches = self._branches(question, frontier, held, used_bridges)
            if not branches:
                stop = "no_bridge"
                break
            hop_steps: list[HopStep] = []
            repeated = 0
            looping = 0
            for parent, bridge in branches:
                query = f"{bridge.value} " * self.config.bridge_weight + question
                if fold(query) in issued:
                    repeated += 1
                    continue
                issued.add(fold(query))
                exclude = tuple(held)
                hits = self.retriever.retrieve(query, cfg.k, exclude=exclude)
                top = hits[: cfg.keep_per_branch]
                step_id = f"s{len(steps) + len(hop_steps) + 1}"
                bridge_state = {"value": bridge.value, "kind": bridge.kind, "from_chunk": parent.chunk_id}
                step = self._step(step_id, hop, bridge.value, query, hits, top, (parent.step_id,), bridge_state, clock)
                hop_steps.append(step)
                if self._loops(hits, held):
                    looping += 1
            steps.extend(hop_steps)
            if hop_steps and looping == len(hop_steps):
                stop = "loop_detected"
                break
            if not hop_steps:
                stop = "loop_detected" if repeated else "no_bridge"
                break
            frontier = []
            for step in hop_steps:
                frontier.extend(self._hold(step, held))
            if not frontier:
                stop = "no_new_evidence"
            elif self._sufficient(question, steps, held):
                stop = "sufficient"

        evidence = self._rank(question, steps, held)
        hops_done = max(s.hop for s in steps)
        answer = extract_answer(
            question, evidence, confidence=_confidence(evidence, hops_done=hops_done, hops_wanted=min(2, cfg.max_hops))
        )
        return Trace(
            run_id=run_id,
            case_id=case_id,
            question=question,
            steps=tuple(steps),
            evidence=evidence,
            answer=answer,
            stop_reason=stop,
            config_hash=self.config_hash,
            engine=self.name,
            latency_ms=clock.elapsed_ms(),
        )

    # -- parts ----------------------------------------------------------------------------------

    def _step(
        self,
        step_id: str,
        hop: int,
        sub_query: str,
        issued_query: str,
        hits: list[Hit],
        selected: list[Hit],
        depends_on: tuple[str, ...],
        bridge: dict,
        clock: _StepClock,
    ) -> HopStep:
        now = clock.elapsed_ms()
        previous = getattr(clock, "last_ms", 0.0)
        clock.last_ms = now  # type: ignore[attr-defined]
        return HopStep(
            step_id=step_id,
            hop=hop,
            sub_query=sub_query,
            issued_query=issued_query,
            hits=tuple(hits),
            selected=tuple(h.chunk_id for h in selected),
            depends_on=depends_on,
            bridge=bridge,
            latency_ms=round(now - previous, 3),
            cumulative_ms=round(now, 3),
        )

    def _seed_hits(self, chunk_ids: Sequence[str]) -> list[Hit]:
        hits = []
        for rank, chunk_id in enumerate(chunk_ids, start=1):
            chunk = self.chunks.get(chunk_id)
            if chunk is None:
                raise ConfigError(f"oracle seed chunk {chunk_id!r} is not in the index; seed with ids from chunks.jsonl")
            document = self.documents.get(chunk.doc_id)
            hits.append(
                Hit(
                    chunk_id=chunk_id,
                    doc_id=chunk.doc_id,
                    score=1.0,
                    rank=rank,
                    retriever="oracle",
                    start=chunk.start,
                    end=chunk.end,
                    title=document.title if document else "",
                )
            )
        return hits

    def _hold(self, step: HopStep, held: dict[str, Evidence]) -> list[Evidence]:
        new: list[Evidence] = []
        by_id = {h.chunk_id: h for h in step.hits}
        for chunk_id in step.selected:
            if chunk_id in held:
                continue
            item = _evidence(by_id[chunk_id], self.chunks, self.documents, step)
            held[chunk_id] = item
            new.append(item)
        return new

    def _branches(
        self,
        question: str,
        frontier: list[Evidence],
        held: dict[str, Evidence],
        used: set[str],
    ) -> list[tuple[Evidence, BridgeCandidate]]:
        cfg = self.config
        titles = tuple(e.title for e in held.values())
        per_item: list[list[tuple[Evidence, BridgeCandidate]]] = []
        for item in frontier:
            found = extract_bridges(
                item.text,
                question=question,
                chunk_id=item.chunk_id,
                exclude=titles,
                limit=cfg.bridges_per_evidence * 2,
                known_titles=self.known_titles,
                own_title=item.title,
            )
            fresh = [(item, b) for b in found if fold(b.value) not in used][: cfg.bridges_per_evidence]
            per_item.append(fresh)
        # Interleave items so every frontier item gets its best bridge before any gets a second.
        branches: list[tuple[Evidence, BridgeCandidate]] = []
        for depth in range(cfg.bridges_per_evidence):
            for fresh in per_item:
                if depth < len(fresh) and len(branches) < cfg.max_branches:
                    key = fold(fresh[depth][1].value)
                    if key not in used:
                        used.add(key)
                        branches.append(fresh[depth])
        return branches

    def _sufficient(self, question: str, steps: list[HopStep], held: dict[str, Evidence]) -> bool:
        """Offline sufficiency: the best chain found so far accounts for most of the question."""
        threshold = self.config.sufficient_coverage
        if threshold >= 1.0:
            return False
        best = [e.chunk_id for e in self._rank(question, steps, held)[:2]]
        return question_coverage(set(self.analyze(question)), best, self.term_weights) >= threshold

    def _loops(self, hits: list[Hit], held: dict[str, Evidence]) -> bool:
        """A hop loops when most of what it finds is what we already hold (same documents)."""
        top = hits[: max(self.config.keep_per_branch, 3)]
        if not top:
            return False
        held_docs = {e.doc_id for e in held.values()}
        overlap = sum(1 for h in top if h.doc_id in held_docs) / len(top)
        return overlap >= self.config.loop_overlap

    def _rank(self, question: str, steps: list[HopStep], held: dict[str, Evidence]) -> tuple[Evidence, ...]:
        cfg = self.config
        folded_question = " ".join(fold(question).split())
        first_hop = [h for h in steps[0].hits if h.chunk_id in held]
        branches = [
            Branch(parent=s.bridge["from_chunk"], hits=[h for h in s.hits if h.chunk_id in held])
            for s in steps[1:]
            if s.bridge.get("from_chunk")
        ]
        order = order_by_chains(
            set(self.analyze(question)),
            first_hop,
            branches,
            self.term_weights,
            parents=cfg.keep_first_hop,
            per_branch=cfg.keep_per_branch,
            limit=cfg.context_k,
            named=lambda chunk_id: _names_title(folded_question, held[chunk_id].title),
        )
        for chunk_id in held:  # anything held but not placed goes last, in the order it was found
            if chunk_id not in order and len(order) < cfg.context_k:
                order.append(chunk_id)
        ranked = []
        for position, chunk_id in enumerate(order, start=1):
            item = held[chunk_id]
            ranked.append(
                Evidence(
                    hit=replace(item.hit, rank=position, retriever=f"chains:{item.hit.retriever}"),
                    text=item.text,
                    title=item.title,
                    hop=item.hop,
                    step_id=item.step_id,
                    sub_query=item.sub_query,
                )
            )
        return tuple(ranked)


def _title_of(chunk: Chunk, documents: Mapping[str, Document]) -> str:
    document = documents.get(chunk.doc_id)
    return document.title if document else ""


def _names_title(folded_question: str, title: str) -> bool:
    """Whether the question names this passage's title (a strong sign it is a chain's anchor)."""
    key = title_key(title)
    return len(key) >= 3 and f" {key} " in f" {folded_question.strip('?!. ')} ".replace("?", " ").replace(",", " ")
