"""No PII and no credential survives in any byte a writer stores, because every writer calls one boundary.

Each writer registered in ``hoprag.security.boundary.WRITERS`` has a driver here that makes it write
text holding generated PII of every kind and credentials (URL passwords, ``api_key=`` values, bearer
tokens, ``sk-`` keys); the test reads back every byte written (files, the SQLite database, exported
span attributes) and looks for each value, raw and JSON-escaped. The registry test fails when a writer
is registered without a driver, when a driver's writer did not call the boundary, and when a command
of the CLI is not classified below: a new writer, or a new command that writes, cannot skip the boundary
unnoticed.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoprag.records import Answer, Document, Evidence, Hit, HopStep, Trace
from hoprag.security import boundary

ROOT = Path(__file__).resolve().parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"

pytestmark = pytest.mark.integration

# --- generated PII and credentials ----------------------------------------------------------------

_LOCAL = "abcdefghijklmnopqrstuvwxyzëöüñçé用户名мир"
_LABEL = "abcdefghijklmnopqrstuvwxyz0123456789ëäöü例子пример"
_TLDS = ("com", "org", "de", "io", "广告", "рф", "xn--p1ai", "example")


@st.composite
def emails(draw) -> str:
    local = draw(st.text(_LOCAL, min_size=1, max_size=10))
    labels = draw(st.lists(st.text(_LABEL, min_size=1, max_size=10).filter(lambda s: not s[0].isdigit()),
                           min_size=1, max_size=2))
    return f"{local}@{'.'.join(labels)}.{draw(st.sampled_from(_TLDS))}"


def _digits(n: int) -> st.SearchStrategy[str]:
    return st.text("0123456789", min_size=n, max_size=n)


@st.composite
def phones(draw) -> str:
    kind = draw(st.sampled_from(["intl", "nanp", "uk", "fr"]))
    if kind == "intl":
        return f"+{draw(st.integers(1, 99))} {draw(_digits(3))} {draw(_digits(3))} {draw(_digits(4))}"
    if kind == "nanp":
        return f"({draw(st.integers(200, 999))}) {draw(_digits(3))}-{draw(_digits(4))}"
    if kind == "uk":
        return f"0{draw(st.integers(20, 99))} {draw(_digits(4))} {draw(_digits(4))}"
    return "0" + str(draw(st.integers(1, 9))) + "".join(f" {draw(_digits(2))}" for _ in range(4))


def _luhn_digit(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:  # doubled: the check digit will sit to the right of these
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return str((10 - total % 10) % 10)


@st.composite
def cards(draw) -> str:
    body = draw(st.sampled_from(["4", "51", "52", "55"])) + draw(_digits(13))
    body = body[:15]
    number = body + _luhn_digit(body)
    return " ".join(number[i:i + 4] for i in range(0, 16, 4)) if draw(st.booleans()) else number


@st.composite
def ibans(draw) -> str:
    country = draw(st.sampled_from(["DE", "GB", "FR", "NL"]))
    bban = draw(_digits(18)) if country != "GB" else "WEST" + draw(_digits(14))
    moved = bban + country + "00"
    check = 98 - int("".join(str(int(ch, 36)) for ch in moved)) % 97
    iban = f"{country}{check:02d}{bban}"
    return " ".join(iban[i:i + 4] for i in range(0, len(iban), 4)) if draw(st.booleans()) else iban


@st.composite
def national_ids(draw) -> str:
    if draw(st.booleans()):
        area = draw(st.integers(1, 665).filter(lambda n: n != 0))
        return f"{area:03d}-{draw(st.integers(1, 99)):02d}-{draw(st.integers(1, 9999)):04d}"
    return f"AB {draw(_digits(2))} {draw(_digits(2))} {draw(_digits(2))} C"


_SECRET = st.text("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789", min_size=14, max_size=24)


@st.composite
def credentials(draw) -> tuple[str, str]:
    """(text holding a credential, the credential alone)."""
    secret = draw(_SECRET)
    form = draw(st.sampled_from(["userinfo", "query", "bearer", "sk", "assigned"]))
    if form == "userinfo":
        return f"http://user:{secret}@127.0.0.1:9/v1", secret
    if form == "query":
        name = draw(st.sampled_from(["api_key", "key", "token", "access_token", "sig"]))
        return f"https://search.example.net/v1/q?lang=en&{name}={secret}", secret
    if form == "bearer":
        return f"Authorization: Bearer 9{secret}", "9" + secret
    if form == "sk":
        return f"sk-{secret}", f"sk-{secret}"
    return f"HOPRAG_API_KEY={secret}", secret


@st.composite
def leaky_texts(draw) -> tuple[str, list[str]]:
    """A real sentence with one value of every kind (and a credential) set in between its words."""
    words = draw(st.sampled_from(SENTENCES)).split()
    values = [draw(emails()), draw(phones()), draw(cards()), draw(ibans()), draw(national_ids())]
    cred_text, cred = draw(credentials())
    for value in [*values, cred_text]:
        words.insert(draw(st.integers(0, len(words))), value)
    return " ".join(words), [*values, cred]


SENTENCES = [
    "Scott Derrickson is an American director, screenwriter and producer born on July 16, 1966.",
    "The 2021-03-04 release (version 2.10.3) fixed pages 123-145 and scored 0.93 on the benchmark.",
    "Ed Wood is a 1994 American biographical period comedy-drama film directed by Tim Burton.",
]


# --- the writers ------------------------------------------------------------------------------------

def _trace(text: str, case_id: str = "q1") -> Trace:
    """A trace with ``text`` in every text field a writer stores."""
    hit = Hit(chunk_id="d1#0", doc_id="d1", score=1.0, rank=1, retriever="bm25", start=0, end=len(text), title=text)
    step = HopStep(step_id="s1", hop=1, sub_query=text, issued_query=text, hits=(hit,), selected=("d1#0",),
                   bridge={"value": text}, error=text)
    evidence = Evidence(hit=hit, text=text, title=text, hop=1, step_id="s1", sub_query=text)
    return Trace(run_id="r", case_id=case_id, question=text, steps=(step,), evidence=(evidence,),
                 answer=Answer(text=text), error=text, plan={"note": text}, warnings=(text,))


class _Echo:
    """An engine whose trace carries the question in every text field."""

    name = "echo"
    config_hash = "echo"

    def answer(self, question: str, *, case_id: str = "", run_id: str = "") -> Trace:
        return _trace(question, case_id)


def write_run_traces(text: str, work: Path) -> list[Path]:
    from hoprag.pipeline.batch import Question, run_questions

    run_questions(_Echo(), [Question("q1", text)], work / "run.jsonl", run_id="r")
    return [work / "run.jsonl"]


def write_otel_import(text: str, work: Path) -> list[Path]:
    from hoprag.otel_import import import_otel_traces

    def attr(key: str, value: str) -> dict:
        return {"key": key, "value": {"stringValue": value}}

    spans = [
        {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "query", "startTimeUnixNano": "1", "endTimeUnixNano": "9",
         "attributes": [attr("hoprag.case_id", "q1"), attr("input.value", text), attr("output.value", text)]},
        {"traceId": "ab" * 16, "spanId": "02" * 8, "parentSpanId": "01" * 8, "name": "retrieve",
         "startTimeUnixNano": "2", "endTimeUnixNano": "3",
         "attributes": [attr("openinference.span.kind", "RETRIEVER"), attr("input.value", text),
                        attr("retrieval.documents.0.document.id", "d1"),
                        attr("retrieval.documents.0.document.content", text)]},
        {"traceId": "ab" * 16, "spanId": "03" * 8, "parentSpanId": "01" * 8, "name": "llm",
         "startTimeUnixNano": "4", "endTimeUnixNano": "8",
         "attributes": [attr("openinference.span.kind", "LLM"), attr("output.value", text)]},
    ]
    source = work / "spans.json"
    source.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}), encoding="utf-8")
    import_otel_traces(source, work / "otel.jsonl")
    return [work / "otel.jsonl"]


def write_recorder_traces(text: str, work: Path) -> list[Path]:
    """A pipeline's calls recorded with hoprag.record: ``text`` in the question, query, hit, bridge,
    answer and the error of a block that raised."""
    import hoprag

    out = work / "recorded.jsonl"
    with hoprag.record("q1", text, path=out) as r:
        r.retrieval(text, [{"id": "d1", "text": text, "title": text}], bridge=text)
        r.answer(text, citations=["d1"])
    with pytest.raises(RuntimeError):
        with hoprag.record("q2", text, path=out) as r:
            raise RuntimeError(text)
    return [out]


def write_shared_traces(text: str, work: Path) -> list[Path]:
    from hoprag.evaluation.sharing import redact_traces_file

    raw = work / "raw.jsonl"
    raw.write_text(json.dumps(_trace(text).to_dict(), ensure_ascii=False) + "\n", encoding="utf-8")
    redact_traces_file(raw, work / "shared.jsonl")
    return [work / "shared.jsonl"]


def _store_files(path: Path) -> list[Path]:
    return [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-journal")) if p.exists()]


def write_store(text: str, work: Path) -> list[Path]:
    """The run store's trace rows, feedback events, and a run's config and failure reason."""
    from datetime import datetime, timezone

    from hoprag.store import RunStore
    from hoprag.store.records import FeedbackEvent

    path = work / "store.db"
    store = RunStore(path)
    try:
        store.create_run("r", config={"note": text}, meta={"who": text})
        store.add_traces("r", [_trace(text)])
        store.add_feedback([FeedbackEvent(event_id="e1", run_id="r", kind="thumbs", ts=datetime.now(timezone.utc),
                                          case_id="q1", value="down", meta={"user": text, "comment": text})])
        store.finish_run("r", "failed", error=f"ValueError: {text}")
    finally:
        store.close()
    return _store_files(path)


def write_service(text: str, work: Path) -> list[Path]:
    from hoprag.service.records import ServiceStore
    from hoprag.store import RunStore

    path = work / "service.db"
    store = RunStore(path)
    service = ServiceStore(store, trace_run="serve", feedback_run="fb")
    try:
        service.add_trace(_trace(text, case_id="t-1"), citations_shown=1)
        queued = service.trace("t-1")
        assert queued is not None and queued.redacted  # what the API shows before the write is redacted too
        service.add_feedback("t-1", "caller", thumbs="down", tags=[], comment=text)
    finally:
        service.close()
        store.close()
    return _store_files(path)


class _Span:
    def __init__(self, sink: list[str], attributes: dict) -> None:
        sink.extend(str(v) for v in attributes.values())

    def end(self, end_time: int | None = None) -> None:
        pass

    def get_span_context(self):  # a span that is not exported has no valid ids, as a no-op tracer's
        from opentelemetry.trace import INVALID_SPAN_CONTEXT

        return INVALID_SPAN_CONTEXT


class _Tracer:
    """Keeps every attribute value a span would export."""

    def __init__(self) -> None:
        self.values: list[str] = []

    def start_span(self, name: str, context=None, start_time=None, attributes=None) -> _Span:
        return _Span(self.values, attributes or {})


def write_telemetry(text: str, work: Path) -> list[Path]:
    pytest.importorskip("opentelemetry")
    from hoprag import telemetry

    tracer = _Tracer()
    telemetry.use_tracer(tracer)
    try:
        trace = _trace(text)
        telemetry.record_trace(replace(trace, timings={"retrieval_ms": 1.0}))
    finally:
        telemetry.use_tracer(None)
    out = work / "spans.txt"
    out.write_text("\n".join(tracer.values), encoding="utf-8")
    return [out]


def write_ablation_traces(text: str, work: Path) -> list[Path]:
    from hoprag.datasets.schema import load_cases
    from hoprag.evaluation.ablations import run_ablations

    index, _ = tiny_index(text, work)
    run_ablations(index, load_cases(ENTERPRISE / "cases.jsonl")[:1], work / "ablate")
    return sorted((work / "ablate").glob("traces-*.jsonl"))


def tiny_index(text: str, work: Path):
    """A two-document index whose passages hold ``text``."""
    from hoprag.index.store import build_index, load_index

    docs = [Document(id="d1", title="Kestrel", text=f"Kestrel Dynamics legal contact. {text}"),
            Document(id="d2", title="Osprey", text=f"Osprey Holdings owns Kestrel Dynamics. {text}")]
    build_index(docs, work / "idx")
    return load_index(work / "idx"), docs


def write_run_over_index(text: str, work: Path) -> list[Path]:
    """``run_questions`` with the real engines over a tiny index: the question and the passages hold ``text``."""
    from hoprag.pipeline.factory import make_engine
    from hoprag.pipeline.batch import Question, run_questions

    index, _ = tiny_index(text, work)
    outs = []
    for kind in ("single", "multihop"):
        out = work / f"run-{kind}.jsonl"
        run_questions(make_engine(kind, index), [Question("q1", f"Who owns Kestrel? {text}")], out, run_id="r")
        outs.append(out)
    return outs


#: writer name → the driver that makes it write ``text`` and returns the files it wrote
DRIVERS: dict[str, Callable[[str, Path], list[Path]]] = {
    "run-traces": write_run_traces,
    "ablation-traces": write_ablation_traces,
    "otel-import": write_otel_import,
    "recorder-traces": write_recorder_traces,
    "shared-traces": write_shared_traces,
    "store-traces": write_store,
    "store-feedback": write_store,
    "store-runs": write_store,
    "service-traces": write_service,
    "service-feedback": write_service,
    "telemetry": write_telemetry,
}
# the cheap ones, run on every generated example (the ablation driver runs in the registry test)
FAST = ("run-traces", "otel-import", "recorder-traces", "shared-traces", "store-traces", "service-traces",
        "telemetry")


def survivors(files: list[Path], values: list[str]) -> list[str]:
    """The values found in the files' bytes: as written, JSON-escaped (ensure_ascii) or in any case."""
    data = b"".join(p.read_bytes() for p in files)
    text = data.decode("utf-8", errors="replace").casefold()
    found = []
    for value in values:
        forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
        if any(form.encode("utf-8") in data or form.casefold() in text for form in forms):
            found.append(value)
    return found


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(leaky=leaky_texts())
def test_no_generated_pii_or_credential_survives_any_writer(leaky: tuple[str, list[str]]) -> None:
    text, values = leaky
    for name in FAST:
        with tempfile.TemporaryDirectory() as tmp:
            files = DRIVERS[name](text, Path(tmp))
            assert files, name
            assert survivors(files, values) == [], f"{name} wrote {survivors(files, values)} in clear"


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(leaky=leaky_texts())
def test_run_over_a_real_index_leaks_nothing(leaky: tuple[str, list[str]]) -> None:
    text, values = leaky
    with tempfile.TemporaryDirectory() as tmp:
        files = write_run_over_index(text, Path(tmp))
        assert survivors(files, values) == []
        assert "<EMAIL_1>" in files[0].read_text(encoding="utf-8")


def test_no_redact_keeps_pii_but_never_a_credential(tmp_path: Path) -> None:
    from hoprag.pipeline.batch import Question, run_questions

    text = "write to zoë@exämple.com via http://user:s3cretPassw0rd@127.0.0.1:9/v1"
    run_questions(_Echo(), [Question("q1", text)], tmp_path / "raw.jsonl", run_id="r", redact=False)
    raw = (tmp_path / "raw.jsonl").read_text(encoding="utf-8")
    assert "zoë@exämple.com" in raw and "s3cretPassw0rd" not in raw and "user:***@127.0.0.1" in raw


def test_text_without_pii_is_written_byte_identical(tmp_path: Path) -> None:
    from hoprag.pipeline.batch import Question, run_questions

    text = SENTENCES[1] + " See https://example.org/docs?page=2 and ISBN 0-306-40615-2, pp. 12-19, 1998-2001."
    trace = _trace(text)
    assert boundary.trace_for_storage(trace, "run-traces") == replace(trace, redacted=True)
    assert boundary.trace_for_storage(trace, "run-traces", redact=False) is trace
    for redact in (True, False):
        out = tmp_path / f"t-{redact}.jsonl"
        run_questions(_Echo(), [Question("q1", text)], out, run_id="r", redact=redact)
        written = json.loads(out.read_text(encoding="utf-8").splitlines()[1])
        assert written["question"] == text and written["evidence"][0]["text"] == text
        assert written["redactions"] == {} and written["redaction_shifts"] == {}


# --- the registry -----------------------------------------------------------------------------------

def test_every_registered_writer_has_a_driver_that_goes_through_the_boundary(tmp_path: Path) -> None:
    assert set(DRIVERS) == set(boundary.WRITERS), "a writer registered without a driver here (or a stale driver)"
    values = ["legal-ops@kestrel-dynamics.example", "s3cretPassw0rdXYZ"]
    text = f"mail {values[0]} at http://svc:{values[1]}@10.0.0.1:8080/v1 today"
    done: dict[Callable, tuple[list[Path], dict[str, int]]] = {}
    for name, driver in DRIVERS.items():
        if driver not in done:
            work = tmp_path / driver.__name__
            work.mkdir()
            with boundary.recording() as seen:
                files = driver(text, work)
            done[driver] = (files, dict(seen))
        files, seen = done[driver]
        assert seen.get(name, 0) > 0, f"{name}: {driver.__name__} wrote without calling the boundary as {name!r}"
        assert survivors(files, values) == [], f"{name} wrote {survivors(files, values)} in clear"


def test_an_unregistered_writer_is_refused() -> None:
    with pytest.raises(ValueError, match="register it"):
        boundary.text_for_storage("x", "my-new-exporter")


def _commands(group, prefix: str = "") -> dict[str, object]:
    """Every command of a typer app by its full name (``traces import``)."""
    found = {}
    for command in group.registered_commands:
        if command.hidden:  # a renamed command's old spelling: the same command
            continue
        name = command.name or command.callback.__name__.removesuffix("_cmd").replace("_", "-")
        found[f"{prefix}{name}"] = command
    for sub in group.registered_groups:
        if sub.hidden:
            continue
        found.update(_commands(sub.typer_instance, f"{prefix}{sub.name} "))
    return found


#: What each command stores or exports, and through which writer. A command that writes data
#: derived from already-stored traces or from the user's own corpus says so; "-" writes nothing that
#: holds answer text (prints, or writes numbers, ids and labels).
COMMAND_WRITERS: dict[str, str] = {
    "run": "run-traces", "ablate": "ablation-traces", "traces redact": "shared-traces",
    "traces import": "otel-import", "serve": "service-traces service-feedback store-traces store-feedback",
    "demo": "run-traces store-traces store-runs", "gate run": "run-traces store-traces store-runs",
    "feedback import": "store-feedback store-runs",
    # reports scored from traces files that were redacted when they were written (run, ablate, otel import)
    "eval": "derived", "compare": "derived", "release": "derived",
    "trec export": "derived",
}


def test_every_command_is_classified() -> None:
    from hoprag.cli import app

    commands = set(_commands(app))
    unknown = sorted(commands - set(COMMAND_WRITERS) - READ_ONLY_OR_CORPUS)
    assert not unknown, (f"commands {unknown} are not classified: say which boundary writer they store through "
                         "in COMMAND_WRITERS, or why they store no answer text in READ_ONLY_OR_CORPUS")
    stale = sorted((set(COMMAND_WRITERS) | READ_ONLY_OR_CORPUS) - commands)
    assert not stale, f"no such commands any more: {stale}"
    for command, writers in COMMAND_WRITERS.items():
        for writer in writers.split():
            assert writer == "derived" or writer in boundary.WRITERS, (command, writer)


#: Commands that print only (``ask --json`` prints raw text by design and stores nothing), or write the
#: user's own corpus, cases, index, labels, pools or metrics back out.
READ_ONLY_OR_CORPUS = {
    "import", "index", "search", "ask", "cases audit", "cases split", "cases leakage", "cases synth", "cases pool",
    "cases judgments", "judge calibrate", "gate check", "gate baseline", "gate diff", "trec eval", "runs list",
    "runs rm",
}


def test_a_password_in_base_url_is_neither_printed_nor_stored(tmp_path: Path, capsys) -> None:
    """`hoprag run` and `hoprag ask` against a server that refuses the connection: the URL is named, its
    password never (it reached the traces' error and warnings and the terminal before the boundary)."""
    from typer.testing import CliRunner

    from hoprag.cli import app

    tiny_index("", tmp_path)
    cases = tmp_path / "cases.jsonl"
    cases.write_text((ENTERPRISE / "cases.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    url = "http://user:s3cretPassw0rd@127.0.0.1:9/v1"
    model = ["--llm", "openai:tiny-model", "--base-url", url, "--llm-retries", "0"]
    run = CliRunner().invoke(app, ["run", str(tmp_path / "idx"), str(cases), "--out", str(tmp_path / "t.jsonl"),
                                   "--quiet", *model])
    written = (tmp_path / "t.jsonl").read_text(encoding="utf-8")
    assert "user:***@127.0.0.1:9" in written + run.output  # the server is still named
    assert "s3cretPassw0rd" not in written + run.output
    from hoprag.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as ended:
        main(["ask", str(tmp_path / "idx"), "who owns Kestrel?", *model, "--strict-llm"])
    printed = capsys.readouterr()
    assert ended.value.code == 2 and "cannot reach the LLM server at http://user:***@127.0.0.1:9" in printed.err
    assert "s3cretPassw0rd" not in printed.out + printed.err
