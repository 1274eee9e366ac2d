"""Small real LlamaIndex and Haystack pipelines over the HotpotQA dev slice, traced by their own
OpenInference instrumentors and exported as OTLP JSON by the OpenTelemetry SDK.

Each pipeline answers every case with two retrieval calls (the question, then the question and the
title of the first hit) and a deterministic answer step given a prompt in the framework's own way
(LlamaIndex's default question-answering template filled by its MockLLM, which echoes the prompt;
Haystack's PromptBuilder feeding a generator component that replies with the best second-hop title),
so no model runs. The prompt holds the second call's best :data:`SECOND_IN_PROMPT` hits, then the
first call's: not every hit, and not in retrieval order; the selected evidence hoprag reads from it.
The frameworks keep their default ids (LlamaIndex node UUIDs, Haystack content hashes): the corpus
id is only in the documents' metadata, as it is in a user's pipeline. ``Run.results`` holds what
the pipeline itself retrieved, and ``Run.prompted`` what it put in its prompt, by corpus id, for an
independent computation of the scores.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoprag.datasets.importers import import_dataset, write_import

SLICE = Path(__file__).parents[1] / "data" / "hotpotqa_dev_slice.json"
TOP_K = 3
SECOND_IN_PROMPT = 2  # the prompt holds the second call's best two hits, then the first call's: one is left out


@dataclass(frozen=True)
class Run:
    """One pipeline's pass over the cases: the OTLP JSON file and what it retrieved per case."""

    spans: Path
    results: dict[str, list[list[str]]]  # case id -> per retrieval call, corpus ids in rank order
    answers: dict[str, str]
    prompted: dict[str, list[str]]  # case id -> the documents the prompt holds, by corpus id, in its order


def hotpot_slice(out_dir: Path) -> tuple[Any, Path, Path]:
    """The slice's import result and its cases.jsonl and corpus.jsonl under ``out_dir``."""
    result = import_dataset("hotpotqa", [SLICE])
    write_import(result, out_dir)
    return result, out_dir / "cases.jsonl", out_dir / "corpus.jsonl"


@contextmanager
def _exporting(path: Path) -> Iterator[Any]:
    """A tracer provider whose finished spans are written to ``path`` as OTLP JSON, one export
    request per line (the form the Collector's file exporter writes: hex ids, camelCase keys), and
    beside it (``.binpb``) as the Collector's protobuf stream."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": path.stem}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.force_flush()
    write_otlp_json(exporter.get_finished_spans(), path)
    write_otlp_protobuf(exporter.get_finished_spans(), path.with_suffix(".binpb"))


def write_otlp_protobuf(spans: Sequence[Any], path: Path, batch: int = 50) -> None:
    """SDK spans as the SDK's own protobuf requests, each preceded by its length in 4 big-endian bytes
    (the Collector file exporter's format: proto), in the batches of :func:`write_otlp_json`."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    with path.open("wb") as handle:
        for start in range(0, len(spans), batch):
            data = encode_spans(spans[start:start + batch]).SerializeToString()
            handle.write(len(data).to_bytes(4, "big") + data)


def write_otlp_json(spans: Sequence[Any], path: Path, batch: int = 50) -> None:
    """SDK spans as OTLP JSON lines, encoded by the SDK's own OTLP encoder."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    with path.open("w", encoding="utf-8") as handle:
        for start in range(0, len(spans), batch):
            request = MessageToDict(encode_spans(spans[start:start + batch]))
            for resource in request.get("resourceSpans", []):
                for scope in resource.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if span.get(key):  # protobuf's JSON mapping writes bytes as base64, OTLP JSON as hex
                                span[key] = base64.b64decode(span[key]).hex()
            handle.write(json.dumps(request) + "\n")


def run_llamaindex(cases: Sequence[Any], documents: Sequence[Any], out: Path,
                   metadata: Callable[[Any], dict[str, Any]] | None = None) -> Run:
    """A LlamaIndex query engine (BM25 node retriever, MockLLM answer step) over ``documents``."""
    from llama_index.core import Document, Settings
    from llama_index.core.llms import MockLLM
    from llama_index.core.prompts.default_prompts import DEFAULT_TEXT_QA_PROMPT
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.query_engine import CustomQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import MetadataMode
    from llama_index_bm25 import BM25NodeRetriever
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    meta = metadata or (lambda d: {"title": d.title, "doc_id": d.id})
    results: dict[str, list[list[str]]] = {}
    answers: dict[str, str] = {}
    prompted: dict[str, list[str]] = {}
    with _exporting(out) as provider:
        instrumentor = LlamaIndexInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            Settings.llm = MockLLM()  # echoes its prompt: the answer step is deterministic
            nodes = SentenceSplitter(chunk_size=1024).get_nodes_from_documents(
                [Document(text=d.text, metadata=meta(d)) for d in documents])
            corpus_id = {d.text: d.id for d in documents}

            class TwoHopQueryEngine(CustomQueryEngine):
                retriever: BaseRetriever
                current: list[list[str]] = []

                def custom_query(self, query_str: str) -> str:
                    first = self.retriever.retrieve(query_str)[:TOP_K]
                    title = first[0].node.metadata.get("title", "") if first else ""
                    second = self.retriever.retrieve(title or query_str)[:TOP_K]
                    self.current[:] = [[corpus_id[n.node.get_content()] for n in hits] for hits in (first, second)]
                    given = second[:SECOND_IN_PROMPT] + first
                    self.current.append([corpus_id[n.node.get_content()] for n in given])
                    # as LlamaIndex's synthesizers fill their default template: each node under its metadata
                    context = "\n\n".join(n.node.get_content(metadata_mode=MetadataMode.LLM) for n in given)
                    return Settings.llm.predict(DEFAULT_TEXT_QA_PROMPT, context_str=context, query_str=query_str)

            engine = TwoHopQueryEngine(retriever=BM25NodeRetriever(nodes, top_k=TOP_K))
            for case in cases:
                answers[case.case_id] = str(engine.query(case.query))
                *calls, prompted[case.case_id] = [list(hits) for hits in engine.current]
                results[case.case_id] = calls
        finally:
            instrumentor.uninstrument()
    return Run(spans=out, results=results, answers=answers, prompted=prompted)


def run_haystack(cases: Sequence[Any], documents: Sequence[Any], out: Path,
                 metadata: Callable[[Any], dict[str, Any]] | None = None) -> Run:
    """A Haystack pipeline: BM25 retriever, a second-hop query, BM25 again, a generator component."""
    from haystack import Document, Pipeline
    from haystack.components.builders import PromptBuilder
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack_components import SecondHopQuery, TitleAnswerGenerator
    from openinference.instrumentation.haystack import HaystackInstrumentor

    meta = metadata or (lambda d: {"title": d.title, "source_id": d.id})

    corpus_id = {d.text: d.id for d in documents}
    results: dict[str, list[list[str]]] = {}
    answers: dict[str, str] = {}
    prompted: dict[str, list[str]] = {}
    with _exporting(out) as provider:
        instrumentor = HaystackInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            store = InMemoryDocumentStore()
            store.write_documents([Document(content=d.text, meta=meta(d)) for d in documents])
            pipeline = Pipeline()
            pipeline.add_component("first_hop", InMemoryBM25Retriever(store, top_k=TOP_K))
            pipeline.add_component("hop_query", SecondHopQuery())
            pipeline.add_component("second_hop", InMemoryBM25Retriever(store, top_k=TOP_K))
            pipeline.add_component("prompt", PromptBuilder(
                f"Answer the question from these documents.\n{{% for d in second[:{SECOND_IN_PROMPT}] + first %}}"
                "Document: {{ d.content }}\n{% endfor %}Question: {{ question }}\nAnswer:",
                required_variables=["first", "second", "question"]))
            pipeline.add_component("answer", TitleAnswerGenerator())
            pipeline.connect("first_hop.documents", "hop_query.documents")
            pipeline.connect("hop_query.query", "second_hop.query")
            pipeline.connect("first_hop.documents", "prompt.first")
            pipeline.connect("second_hop.documents", "prompt.second")
            pipeline.connect("prompt.prompt", "answer.prompt")
            pipeline.connect("second_hop.documents", "answer.documents")
            for case in cases:
                output = pipeline.run({"first_hop": {"query": case.query}, "hop_query": {"question": case.query},
                                       "prompt": {"question": case.query}},
                                      include_outputs_from={"first_hop", "second_hop"})
                first, second = ([corpus_id[d.content] for d in output[name]["documents"]]
                                 for name in ("first_hop", "second_hop"))
                results[case.case_id] = [first, second]
                prompted[case.case_id] = second[:SECOND_IN_PROMPT] + first  # as the template pastes them
                answers[case.case_id] = output["answer"]["replies"][0]
        finally:
            instrumentor.uninstrument()
    return Run(spans=out, results=results, answers=answers, prompted=prompted)


def chain_coverage_at(cases: Sequence[Any], results: dict[str, list[list[str]]], k: int) -> float:
    """Chain coverage@k computed from the pipeline's own results, apart from hoprag's measures: the
    first k distinct documents in call order, then rank, hold every source of some valid chain.
    For a pipeline whose prompt holds documents, pass ``{case: [prompted]}``: the documents it gave
    its model, in the prompt's order, are the selected evidence (the documented rule)."""
    scores = []
    for case in cases:
        seen: list[str] = []
        for hits in results[case.case_id]:
            seen.extend(doc for doc in hits if doc not in seen)
        top = set(seen[:k])
        covered = any({case.facts[f].source_id for f in chain} <= top for chain in case.valid_chains)
        scores.append(1.0 if covered else 0.0)
    return sum(scores) / len(scores)
