"""``hoprag eval --otel-out / --otel-endpoint``: each scored case's results as OTel GenAI
``gen_ai.evaluation.result`` log records on the span its trace came from (hoprag.otel_scores).

The receiver is a real OTLP/HTTP endpoint on loopback: an HTTP server that decodes each request
body with opentelemetry-proto's ``ExportLogsServiceRequest``, as a collector's OTLP receiver does.
The spans are tests/data/otel_spans.jsonl (two questions of the enterprise sample, each a root
span with retrieval and LLM children); the ids below are read off that file by hand.
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.proto")
pytest.importorskip("httpx")

from google.protobuf import json_format  # noqa: E402
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (  # noqa: E402
    ExportLogsServiceRequest, ExportLogsServiceResponse)

from hoprag.otel_scores import (EVENT, CaseResults, EvaluationResult, logs_requests, otlp_logs_url,  # noqa: E402
                                to_protobuf, trace_origin)
from hoprag.records import Trace  # noqa: E402
from tests.cli_run import run_cli

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
# the root span of each question in otel_spans.jsonl (parentSpanId empty), by case
ORIGIN = {"ent-001": ("5b657f7dd08c2ac3e8608e11d942c6dc", "af6d1dbdb4935237"),
          "ent-003": ("d2370c7c2a3f8e6c3a209b2aa8d6d42c", "174a96178af55682")}


class Receiver:
    """An OTLP/HTTP logs receiver on a free loopback port; ``status`` is what it answers."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[tuple[str, str, ExportLogsServiceRequest]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests.append((self.path, self.headers["Content-Type"],
                                       ExportLogsServiceRequest.FromString(body)))
                reply = ExportLogsServiceResponse().SerializeToString() if status == 200 else b'{"code": 3}'
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def records(self) -> list:
        return [r for _, _, req in self.requests for rl in req.resource_logs for sl in rl.scope_logs
                for r in sl.log_records]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()




@pytest.fixture
def work(tmp_path, monkeypatch, capsys) -> Path:
    shutil.copy(ROOT / "data" / "enterprise" / "cases.jsonl", tmp_path / "cases.jsonl")
    shutil.copy(ROOT / "tests" / "data" / "otel_spans.jsonl", tmp_path / "spans.jsonl")
    monkeypatch.chdir(tmp_path)
    code, said = run_cli(["traces", "import", "spans.jsonl", "--out", "traces.jsonl"], capsys)
    assert code == 0, said
    return tmp_path


def _attrs(record) -> dict:
    return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in record.attributes}


def test_the_receiver_gets_the_scores_eval_reports_on_the_traces_spans(work, capsys) -> None:
    receiver = Receiver()
    try:
        code, said = run_cli(["eval", "cases.jsonl", "traces.jsonl", "--json", "eval.json", "--otel-out", "eval.otlp",
                              "--otel-endpoint", receiver.url], capsys)
    finally:
        receiver.close()
    assert code == 0, said
    assert "sent 18 evaluation events for 2 traced cases (2 on their trace's span)" in said
    [(path, content_type, _)] = receiver.requests
    assert path == "/v1/logs" and content_type == "application/x-protobuf"
    cases = {c["case_id"]: c for c in json.loads((work / "eval.json").read_text())["cases"]}
    got: dict[str, dict[str, tuple]] = {}
    for record in receiver.records():
        attrs = _attrs(record)
        assert record.event_name == EVENT
        assert (record.trace_id.hex(), record.span_id.hex()) == ORIGIN[attrs["hoprag.case_id"]]
        got.setdefault(attrs["hoprag.case_id"], {})[attrs["gen_ai.evaluation.name"]] = (
            attrs.get("gen_ai.evaluation.score.value"), attrs.get("gen_ai.evaluation.score.label"),
            attrs.get("gen_ai.evaluation.explanation"))
    assert set(got) == set(ORIGIN)  # the 14 cases without a trace have nothing to attach to
    for case_id, results in got.items():
        row = cases[case_id]
        # the cut-offs 2, 5, 10 of each measure, EM and F1 (a gold answer), the earliest failure: 9 each
        assert list(results) == ["chain_coverage@2", "chain_coverage@5", "chain_coverage@10", "passage_recall@2",
                                 "passage_recall@5", "passage_recall@10", "answer_em", "answer_f1", "earliest_failure"]
        for name in list(results)[:6] + ["answer_f1"]:
            assert results[name] == (row[name], None, None)  # the very number eval --json reports
        assert results["answer_em"] == (1.0, "correct", None) and row["answer_em"] == 1.0
        # the failure class as the label ("passed" when none), its detail as the explanation
        assert results["earliest_failure"] == (None, row["failure"] or "passed", row["failure_detail"] or None)
    # ent-001's chain needs its 3rd evidence document: covered at 5 and 10, not at 2 (eval.json agrees)
    assert got["ent-001"]["chain_coverage@2"][0] == 0.0 and got["ent-001"]["chain_coverage@5"][0] == 1.0
    # the file holds the same request in OTLP JSON (hex ids), one per line
    [line] = (work / "eval.otlp").read_text().splitlines()
    written = json.loads(line)
    assert written["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["traceId"] == ORIGIN["ent-001"][0]
    assert ExportLogsServiceRequest.FromString(to_protobuf(written)) == receiver.requests[0][2]


def test_a_dead_port_is_one_message_after_the_results_are_written(work, capsys) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    code, said = run_cli(["eval", "cases.jsonl", "traces.jsonl", "--json", "eval.json", "--otel-out", "eval.otlp",
                          "--otel-endpoint", f"http://127.0.0.1:{port}"], capsys)
    assert code == 2 and time.monotonic() - started < 30
    assert f"--otel-endpoint http://127.0.0.1:{port}/v1/logs could not be reached" in said
    assert "the results are in eval.json, eval.otlp" in said and "Fix: start the OTLP/HTTP receiver" in said
    assert "Traceback" not in said and said.count("error:") == 1
    assert json.loads((work / "eval.json").read_text())["cases"] and (work / "eval.otlp").stat().st_size


def test_a_receiver_that_never_answers_is_cut_at_the_timeout(work, capsys) -> None:
    with socket.socket() as silent:  # accepts connections (the backlog) and never reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        code, said = run_cli(["eval", "cases.jsonl", "traces.jsonl", "--json", "eval.json", "--otel-endpoint", url,
                              "--otel-timeout", "1"], capsys)
        took = time.monotonic() - started
    assert code == 2 and took < 20, (took, said)
    assert f"{url}/v1/logs did not answer within 1 s (0 evaluation events sent); the results are in eval.json" in said
    assert "--otel-timeout SECONDS" in said and json.loads((work / "eval.json").read_text())["cases"]


def test_a_refusing_receiver_and_a_bad_url_are_said_with_their_fix(work, capsys) -> None:
    receiver = Receiver(status=400)
    try:
        code, said = run_cli(["eval", "cases.jsonl", "traces.jsonl", "--otel-endpoint", receiver.url + "/v1/logs"],
                             capsys)
    finally:
        receiver.close()
    assert code == 2 and "refused the evaluation events (HTTP 400" in said and "accepts logs" in said
    code, said = run_cli(["eval", "cases.jsonl", "traces.jsonl", "--otel-endpoint", "localhost:4318"], capsys)
    assert code == 2 and "--otel-endpoint 'localhost:4318' is not an http(s) URL" in said
    assert "--otel-endpoint http://127.0.0.1:4318" in said and "wrote" not in said  # refused before scoring
    spans = (work / "spans.jsonl").read_bytes()  # OTLP JSON too, but spans: never replaced by the scores
    code, said = run_cli(["eval", "cases.jsonl", "traces.jsonl", "--otel-out", "spans.jsonl"], capsys)
    assert code == 2 and "not a file of OTLP JSON log records" in said and (work / "spans.jsonl").read_bytes() == spans


@pytest.mark.unit
def test_ids_and_the_logs_url() -> None:
    def trace(plan: dict) -> Trace:
        return Trace(run_id="r", case_id="c", question="q", plan=plan)

    assert trace_origin(trace({"otel_trace_id": "AB" * 16, "otel_span_id": "cd" * 8})) == ("ab" * 16, "cd" * 8)
    assert trace_origin(trace({"otel_trace_id": "0" * 32, "otel_span_id": "cd" * 8})) == ("", "")  # invalid id
    assert trace_origin(trace({"otel_trace_id": "ab" * 16, "otel_span_id": "xyz"})) == ("ab" * 16, "")
    assert trace_origin(trace({})) == ("", "")
    loose = CaseResults("c", "r", "", "", (EvaluationResult("answer_f1", 0.5),))
    [request] = logs_requests([loose], time_ns=7)
    [record] = request["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert "traceId" not in record and "spanId" not in record and record["timeUnixNano"] == "7"
    assert len(logs_requests([loose] * 5, batch=2)) == 3  # 5 records, 2 per request
    assert otlp_logs_url("http://h:4318") == "http://h:4318/v1/logs"
    assert otlp_logs_url("https://h/otlp/") == "https://h/otlp/v1/logs"
    assert otlp_logs_url("http://h:4318/v1/logs") == "http://h:4318/v1/logs"
    parsed = ExportLogsServiceRequest.FromString(to_protobuf(request))
    assert json_format.MessageToDict(parsed)["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["eventName"] == EVENT


def test_hoprags_own_run_records_the_spans_its_scores_attach_to(tmp_path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from hoprag import telemetry
    from hoprag.datasets.schema import load_cases
    from hoprag.evaluation.chain_eval import evaluate_chains
    from hoprag.index.store import IndexConfig, build_index, load_index
    from hoprag.ingest.loaders import load_corpora
    from hoprag.otel_scores import ScoreEvents
    from hoprag.pipeline.factory import make_engine

    build_index(load_corpora([ROOT / "data" / "enterprise" / "corpus.jsonl"]), tmp_path / "index", IndexConfig())
    cases = load_cases(ROOT / "data" / "enterprise" / "cases.jsonl")[:2]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_tracer(provider.get_tracer("hoprag"))
    try:
        engine = telemetry.traced_engine(make_engine("multihop", load_index(tmp_path / "index")))
        traces = [engine.answer(c.query, case_id=c.case_id, run_id="own") for c in cases]
    finally:
        telemetry.use_tracer(None)
        provider.shutdown()
    questions = {s.attributes["hoprag.case_id"]: (f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}")
                 for s in exporter.get_finished_spans() if s.parent is None}
    assert {t.case_id: trace_origin(t) for t in traces} == questions and len(questions) == 2
    report = evaluate_chains(cases, traces, ks=(5,))
    events = ScoreEvents.of(report.to_json(), report.traces)
    records = [r for req in events.requests for rl in req["resourceLogs"] for sl in rl["scopeLogs"]
               for r in sl["logRecords"]]
    assert {(r["traceId"], r["spanId"]) for r in records} == set(questions.values())
    assert "2 on their trace's span" in events.summary()


@pytest.mark.unit
def test_the_records_are_what_the_sdks_own_encoder_makes_of_the_same_events() -> None:
    """The reference: the same two events emitted through the OpenTelemetry SDK's logs API and
    encoded by its OTLP exporter's encoder give the same log records, field for field."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry._logs import LogRecord
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    from hoprag import __version__

    case = CaseResults("ent-001", "r1", "5b657f7dd08c2ac3e8608e11d942c6dc", "af6d1dbdb4935237",
                       (EvaluationResult("chain_coverage@5", 0.5),
                        EvaluationResult("earliest_failure", None, "wrong_answer", "the answer is wrong")))
    [ours] = [ExportLogsServiceRequest.FromString(to_protobuf(r)) for r in logs_requests([case], time_ns=7)]
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger("hoprag.eval", __version__)
    for attributes in ({"gen_ai.evaluation.name": "chain_coverage@5", "gen_ai.evaluation.score.value": 0.5},
                       {"gen_ai.evaluation.name": "earliest_failure", "gen_ai.evaluation.score.label": "wrong_answer",
                        "gen_ai.evaluation.explanation": "the answer is wrong"}):
        logger.emit(LogRecord(timestamp=7, observed_timestamp=7, trace_id=int(case.trace_id, 16),
                              span_id=int(case.span_id, 16), event_name=EVENT,
                              attributes={**attributes, "hoprag.case_id": "ent-001", "hoprag.run_id": "r1"}))
    reference = encode_logs(exporter.get_finished_logs())
    provider.shutdown()
    [theirs] = reference.resource_logs[0].scope_logs
    for record in theirs.log_records:
        record.ClearField("body")  # the SDK sends an empty body; the convention gives the event none
    assert ours.resource_logs[0].scope_logs[0].scope == theirs.scope
    assert list(ours.resource_logs[0].scope_logs[0].log_records) == list(theirs.log_records)
