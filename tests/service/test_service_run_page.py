"""What the trail and the run page are built from: each hop's timings, the sub-query apart from its
conditioning, a passage kept once; a run's metrics over the runs of its index, its report link only with
cases, its thresholds said, and its status true after a restart."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from service_helpers import ENTERPRISE, start_service

from hoprag.records import Hit, HopStep
from hoprag.service.views import split_issued

pytestmark = pytest.mark.integration
QUESTION = "Under the current data residency policy, which hosting region holds the cloud-side data of the Bastion Fleet plans?"


def _step(issued: str, sub_query: str = "", bridge: dict | None = None, retriever: str = "bm25") -> HopStep:
    hit = Hit(chunk_id="c#0", doc_id="c", score=1.0, rank=1, retriever=retriever)
    return HopStep(step_id="s2", hop=2, sub_query=sub_query, issued_query=issued, hits=(hit,), bridge=bridge or {})


@pytest.mark.unit
def test_the_searched_text_and_its_conditioning_are_told_apart() -> None:
    # the bridge expander leads with the bridge value twice (its weight): shown once, apart
    assert split_issued(_step("Steven Bruce Steven Bruce Which Canadian band did he join?", "Steven Bruce",
                              {"value": "Steven Bruce", "kind": "found"})) == \
        ("Which Canadian band did he join?", ["Steven Bruce"])
    # a model's rewrite that does not lead with the value keeps its text; the bridge still shows apart
    assert split_issued(_step("band joined by Steven Bruce", bridge={"value": "Steven Bruce"})) == \
        ("band joined by Steven Bruce", ["Steven Bruce"])
    assert split_issued(_step("ppr: kestrel, wren", retriever="graph")) == ("graph walk", ["kestrel", "wren"])
    assert split_issued(_step("Which plan?")) == ("Which plan?", [])
    assert split_issued(_step("", "Which plan?")) == ("Which plan?", [])


def test_the_trail_has_each_hops_timings_and_keeps_a_passage_once(server) -> None:
    r = httpx.post(server.url + "/api/ask", json={"question": QUESTION}, headers=server.auth("restricted"), timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    kept = [c for s in body["steps"] for c in s["kept"]]
    assert len(kept) == len(set(kept)) == len(body["evidence"])  # each passage kept once, by its first step
    assert all(c in s["selected"] for s in body["steps"] for c in s["kept"])
    for s in body["steps"]:
        if s["conditioning"] and s["kind"] == "retrieval":
            assert not s["query"].startswith(s["conditioning"][0] + " ")
    t = body["timings"]
    hops = sorted({s["hop"] for s in body["steps"]})
    assert len(hops) >= 2 and "hop2.judge_ms" in t
    for hop in hops:
        span = t[f"hop{hop}.end_ms"] - t[f"hop{hop}.start_ms"]
        spent = sum(t.get(f"hop{hop}.{p}_ms", 0.0) for p in ("retrieval", "graph", "judge"))
        assert 0.5 * span <= spent <= span + 0.01  # the phases fill the hop (a pause may fall between), never overlap
    # hops lie between planning and ranking (the phases count from the question's clock's zero: planning
    # holds the run's setup, so a loaded machine's pause before the first tick cannot move a hop past them)
    assert t["hop1.start_ms"] >= t["planning_ms"] - 0.01
    assert t[f"hop{hops[-1]}.end_ms"] <= t["planning_ms"] + t["retrieval_ms"] + 0.01


def test_the_run_page_series_follow_the_runs_of_one_index(server) -> None:
    from hoprag.metrics import Metric

    store = server.state.store.store
    artifact = "artifact-series-test"
    for n, (ndcg, errors) in enumerate(((0.5, 0.0), (0.6, None), (0.55, 0.05))):
        store.create_run(f"series-{n}", kind="gate", artifact_id=artifact)
        rows = [Metric(f"series-{n}", "retrieve", "nDCG@10", ndcg)]
        if errors is not None:
            rows.append(Metric(f"series-{n}", "generate", "error_rate", errors))
        store.add_metrics(rows)
    store.create_run("series-other", kind="gate", artifact_id="another-index")
    r = httpx.get(server.url + "/api/runs/series-2/series", headers=server.auth("restricted"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert [run["run_id"] for run in body["runs"]] == ["series-0", "series-1", "series-2"]
    assert body["stages"] == {"retrieve": {"nDCG@10": [0.5, 0.6, 0.55]}, "generate": {"error_rate": [0.0, None, 0.05]}}
    assert httpx.get(server.url + "/api/runs/series-2/series", params={"limit": 2},
                     headers=server.auth("restricted")).json()["stages"]["retrieve"]["nDCG@10"] == [0.6, 0.55]
    # as for the run's metrics: callers who see every document only, and none without a token
    assert httpx.get(server.url + "/api/runs/series-2/series", headers=server.auth("public")).status_code == 403
    assert httpx.get(server.url + "/api/runs/series-2/series").status_code == 401
    missing = httpx.get(server.url + "/api/runs/no-such-run/series", headers=server.auth("restricted"))
    assert missing.status_code == 404 and set(missing.json()) == {"error", "fix"}
    assert httpx.get(server.url + "/api/runs/" + "x" * 300 + "/series", headers=server.auth("restricted")).status_code == 422
    detail = httpx.get(server.url + "/api/runs/series-1", headers=server.auth("restricted")).json()
    # thresholds were given: the page must not say none are loaded
    assert detail["thresholds_loaded"] is True and detail["gate"]["blocked"] is True
    assert detail["run"]["status"] == "running" and detail["has_report"] is False


def test_an_evaluation_link_only_for_runs_with_the_servers_cases(enterprise_index: Path, tmp_path: Path) -> None:
    from hoprag.datasets.schema import load_cases
    from hoprag.records import Trace

    case = load_cases(ENTERPRISE / "cases.jsonl")[0]
    for server in start_service(enterprise_index, tmp_path / "store.db", clearance="internal", run_id="served",
                                cases=ENTERPRISE / "cases.jsonl"):
        store = server.state.store.store
        store.create_run("evaluated", kind="run")
        store.add_traces("evaluated", [Trace(run_id="evaluated", case_id=case.case_id, question=case.query)])
        r = httpx.post(server.url + "/api/ask", json={"question": case.query, "store": True}, timeout=30)
        assert r.status_code == 200, r.text
        server.state.store.flush()
        served = httpx.get(server.url + "/api/runs/served").json()
        assert served["has_report"] is False  # its traces answer free questions: no case to score them against
        assert httpx.get(server.url + "/api/runs/evaluated").json()["has_report"] is True
        assert httpx.get(server.url + "/api/runs/evaluated/report").status_code == 200
        # a run whose answers cite internal documents (as hoprag gate run's over this corpus do): the
        # internal caller gets its report (it was a 404 'public documents only' behind a shown link); a
        # restricted one in the run hides the link and the report says why
        from hoprag.records import Evidence, Hit

        def cited(doc_id: str) -> Trace:
            hit = Hit(chunk_id=doc_id + "#0", doc_id=doc_id, score=1.0, rank=1, retriever="bm25")
            evidence = Evidence(hit=hit, text="", title="", hop=1, step_id="s1", sub_query=case.query)
            return Trace(run_id="x", case_id=case.case_id, question=case.query, evidence=(evidence,))

        for run_id, doc_id, shown in (("internal-run", "policy-5", True), ("restricted-run", "contract-14", False)):
            store.create_run(run_id, kind="gate-run")
            store.add_traces(run_id, [cited(doc_id)])
            assert httpx.get(server.url + f"/api/runs/{run_id}").json()["has_report"] is shown
            report = httpx.get(server.url + f"/api/runs/{run_id}/report")
            assert report.status_code == (200 if shown else 403), report.text
            assert shown or ("above the clearance 'internal'" in report.json()["error"] and report.json()["fix"])


@pytest.mark.unit
def test_a_restarted_service_writes_its_run_again_and_says_so(tmp_path: Path) -> None:
    from hoprag.service.records import ServiceStore
    from hoprag.store import RunStore

    url = f"sqlite:///{tmp_path / 'store.db'}"
    first = ServiceStore(RunStore(url), trace_run="served", feedback_run="served")
    first.close()
    assert RunStore(url).get_run("served").status == "complete"
    second = ServiceStore(RunStore(url), trace_run="served", feedback_run="served")  # the restart
    assert RunStore(url).get_run("served").status == "running"
    second.close()
    assert RunStore(url).get_run("served").status == "complete"


@pytest.mark.unit
def test_resume_run_takes_over_finished_or_orphaned_runs_only(tmp_path: Path) -> None:
    import sqlalchemy as sa

    from hoprag.store import RunStore
    from hoprag.store import schema as t
    from hoprag.store.writers import current_writer

    store = RunStore(f"sqlite:///{tmp_path / 'store.db'}")
    for run_id in ("done", "orphan", "held"):
        store.create_run(run_id, kind="serve")
    store.finish_run("done")
    host = current_writer().split(":")[0]
    with store.engine.begin() as conn:  # a writer long gone, and a live one (this test's parent process)
        conn.execute(t.runs.update().where(t.runs.c.run_id == "orphan").values(writer=f"{host}:999999999:1"))
        conn.execute(t.runs.update().where(t.runs.c.run_id == "held").values(writer=f"{host}:{os.getppid()}:"))
    assert store.get_run("orphan").status == "incomplete"
    assert store.resume_run("done") and store.resume_run("orphan")
    assert not store.resume_run("held") and not store.resume_run("no-such-run")
    assert {r: store.get_run(r).status for r in ("done", "orphan", "held")} == \
        {"done": "running", "orphan": "running", "held": "running"}
    with store.engine.connect() as conn:
        writers = dict(conn.execute(sa.select(t.runs.c.run_id, t.runs.c.writer)).all())
    assert writers["done"] == writers["orphan"] == current_writer() and writers["held"] != current_writer()
