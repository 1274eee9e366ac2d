"""Traces of real LlamaIndex and Haystack pipelines, with the frameworks' default ids, imported and
scored: the scores equal a computation from the pipelines' own results, never a silent zero. The
pipelines paste some of their hits into their prompts: those, in the prompt's order, are the selected
evidence (hoprag.otel_evidence), and the independent computation follows the same documented rule."""

from __future__ import annotations

import json

import pytest
from pipelines import chain_coverage_at

from hoprag.cli import main
from hoprag.document_resolution import DocumentResolver
from hoprag.errors import InputError
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.io.traces import read_traces
from hoprag.otel_import import import_otel_traces

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUNS = ["llamaindex_run", "haystack_run"]


def _import(run, slice_files, tmp_path, **options):
    result, _, _ = slice_files
    resolver = DocumentResolver(result.documents)
    cases = {c.case_id: c.query for c in result.cases}
    summary = import_otel_traces(run.spans, tmp_path / "traces.jsonl", cases=cases, resolver=resolver, **options)
    return summary, resolver, {t.case_id: t for t in read_traces(tmp_path / "traces.jsonl")}


@pytest.mark.parametrize("fixture", RUNS)
def test_default_ids_resolve_through_metadata_and_score_as_the_pipeline_retrieved(fixture, slice_files, tmp_path,
                                                                                  request) -> None:
    run = request.getfixturevalue(fixture)
    result, _, _ = slice_files
    summary, resolver, traces = _import(run, slice_files, tmp_path)
    recorded = sum(len(hits) for calls in run.results.values() for hits in calls)
    # every recorded id is the framework's own (a node UUID, a content hash): all resolve by metadata
    assert dict(resolver.counts) == {"metadata": recorded}
    assert summary.traces == len(result.cases) == len(traces)
    for case in result.cases:
        trace = traces[case.case_id]
        assert [s.hop for s in trace.steps] == [1, 2]  # two calls, not the nested _retrieve spans too
        assert [[h.doc_id for h in s.hits] for s in trace.steps] == run.results[case.case_id]
        assert trace.answer.text == run.answers[case.case_id]  # text, not {"replies": [...]}
        assert trace.question == case.query
        # what the pipeline put in its prompt, each document once: not every hit, not in retrieval order
        assert [e.hit.doc_id for e in trace.evidence] == list(dict.fromkeys(run.prompted[case.case_id]))
        assert trace.plan["evidence_from"] == "prompt"
    assert summary.evidence_from == {"prompt": len(result.cases)}
    report = evaluate_chains(result.cases, list(traces.values()), ks=(5,))
    expected = chain_coverage_at(result.cases, {cid: [docs] for cid, docs in run.prompted.items()}, 5)
    assert expected > 0  # the check means something only when the pipeline covers some chain
    assert report.aggregate["chain_coverage@5"] == pytest.approx(expected)


@pytest.mark.parametrize("fixture", RUNS)
def test_recorded_text_resolves_when_the_metadata_holds_no_id(fixture, slice_files, tmp_path, request) -> None:
    run = request.getfixturevalue(fixture)
    text = run.spans.read_text(encoding="utf-8")
    stripped = tmp_path / "spans.jsonl"
    # the same spans with the corpus ids taken out of the documents' metadata
    stripped.write_text(text.replace('\\"doc_id\\"', '\\"other\\"').replace('\\"source_id\\"', '\\"other\\"'),
                        encoding="utf-8")
    result, _, _ = slice_files
    resolver = DocumentResolver(result.documents)
    import_otel_traces(stripped, tmp_path / "traces.jsonl", resolver=resolver,
                       cases={c.case_id: c.query for c in result.cases})
    assert set(resolver.counts) == {"content"}
    traces = {t.case_id: t for t in read_traces(tmp_path / "traces.jsonl")}
    assert {cid: [[h.doc_id for h in s.hits] for s in t.steps] for cid, t in traces.items()} == run.results


def test_without_resolution_the_import_is_refused_below_the_share(haystack_run, slice_files, tmp_path) -> None:
    result, _, _ = slice_files
    resolver = DocumentResolver(result.documents, metadata_keys=("nothing",))
    spans = tmp_path / "spans.jsonl"
    text = haystack_run.spans.read_text(encoding="utf-8")
    spans.write_text(text.replace("document.content", "document.ignored"), encoding="utf-8")
    with pytest.raises(InputError, match=r"only 0 of \d+ recorded documents .* --doc-key KEY"):
        import_otel_traces(spans, tmp_path / "traces.jsonl", resolver=resolver,
                           cases={c.case_id: c.query for c in result.cases})
    assert not (tmp_path / "traces.jsonl").exists()


def test_the_cli_prints_the_routes_and_eval_scores_the_import(llamaindex_run, slice_files, tmp_path, capsys) -> None:
    _, cases, corpus = slice_files
    traces = tmp_path / "traces.jsonl"
    main(["traces", "import", str(llamaindex_run.spans), "--out", str(traces), "--corpus", str(corpus),
          "--cases", str(cases)])
    printed = capsys.readouterr().out
    assert "wrote 5 traces" in printed and "30 recorded documents: 0 by id, 30 by metadata" in printed
    assert "selected evidence of 5 traces: 5 from the LLM prompt, 0 from a reranker, 0 all retrieved" in " ".join(
        printed.split())  # the console wraps long lines
    main(["eval", str(cases), str(traces), "--k", "5", "--json", str(tmp_path / "eval.json")])
    aggregate = json.loads((tmp_path / "eval.json").read_text(encoding="utf-8"))["aggregate"]
    result, _, _ = slice_files
    prompted = {cid: [docs] for cid, docs in llamaindex_run.prompted.items()}
    assert aggregate["chain_coverage@5"] == pytest.approx(chain_coverage_at(result.cases, prompted, 5))


def test_a_trace_naming_no_case_is_refused_by_name_or_skipped_and_counted(haystack_run, tmp_path) -> None:
    with pytest.raises(InputError, match=r"trace [0-9a-f]{32} \(question 'Which Canadian.*--lenient"):
        import_otel_traces(haystack_run.spans, tmp_path / "traces.jsonl")
    with pytest.raises(InputError, match=r"none of its 5 traces .*5 naming no case"):
        import_otel_traces(haystack_run.spans, tmp_path / "traces.jsonl", lenient=True)


def test_eval_and_trec_export_refuse_traces_that_match_no_label(haystack_run, slice_files, tmp_path, capsys) -> None:
    _, cases, _ = slice_files
    traces = tmp_path / "traces.jsonl"
    main(["traces", "import", str(haystack_run.spans), "--out", str(traces), "--cases", str(cases)])  # hashes kept
    for argv in (["eval", str(cases), str(traces)],
                 ["trec", "export", str(cases), str(traces), "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r")]):
        capsys.readouterr()
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2
        refusal = " ".join(capsys.readouterr().err.split())
        assert f"{traces}: none of the" in refusal and "--corpus CORPUS" in refusal  # the file, and the fix
    assert not (tmp_path / "r").exists()
