"""The page in real headless Chromium: ask, watch the hops, open a citation, give feedback, gate on it."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_helpers import ROOT, LiveServer, start_service

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
QUESTION = "Which wipe method is required when the gateways used under Project Wren are decommissioned?"


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason + " (.ci/run installs chromium; the dev extra brings playwright)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed")
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        _missing(f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def local_server(enterprise_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """No token file: the local caller may write, at internal clearance."""
    store = tmp_path_factory.mktemp("browser-store") / "store.db"
    yield from start_service(enterprise_index, store, clearance="internal", run_id="browser-run")


def test_ask_cite_and_feedback_in_the_page(browser, local_server: LiveServer) -> None:
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    external: list[str] = []
    page.on("request", lambda req: None if req.url.startswith(local_server.url) else external.append(req.url))
    page.goto(local_server.url + "/")
    page.wait_for_selector("#whoami:has-text('internal')")
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    # live hop progress, then the answer with inline citations
    page.wait_for_selector("#progress li.ev-hop", timeout=20000)
    page.wait_for_selector("#answer-text .cite", timeout=20000)
    steps = page.locator("#progress li").all_inner_texts()
    assert any(s.startswith("Hop 1") for s in steps) and any("hit" in s for s in steps)
    assert any(s.startswith("Synthesising") for s in steps)
    assert page.locator("#trail .hop").count() >= 1
    assert page.locator("#trail li.kept").count() >= 1
    answer = page.inner_text("#answer-text")
    assert answer.strip()

    # a citation opens its document with the cited span highlighted, and the click is logged
    first = page.locator("#answer-text .cite").first
    chunk_id = first.get_attribute("data-chunk")
    first.click()
    page.wait_for_selector("#cited-span", timeout=10000)
    highlighted = page.inner_text("#cited-span")
    chunk = local_server.state.index.chunks[chunk_id]
    assert highlighted.strip() == chunk.text.strip()
    store = local_server.state.store.store

    def events(kind: str) -> list:
        return [e for e in store.feedback("browser-run") if e.kind == kind]

    page.wait_for_function("() => true")  # let the click's fetch go out
    for _ in range(50):
        if events("click"):
            break
        page.wait_for_timeout(100)
    assert [e.chunk_id for e in events("click")] == [chunk_id]

    # thumbs-down with a tag lands in the store and in the feedback stage's metrics
    page.click("#thumbs-down")
    page.check("#tags input[value='wrong_document']")
    page.click("#send-feedback")
    page.wait_for_selector("#feedback-status:has-text('Thanks')", timeout=10000)
    trace_id = events("click")[0].case_id
    assert [(e.value, e.case_id) for e in events("thumbs")] == [("down", trace_id)]
    assert [(e.tag, e.stage) for e in events("tag")] == [("wrong_document", "retrieve")]

    from typer.testing import CliRunner

    from hoprag.cli import app

    result = CliRunner().invoke(app, ["gate", "check", "--run-id", "browser-run", "--thresholds",
                                      str(ROOT / "thresholds.yaml"), "--no-baseline", "--format", "json",
                                      "--store", str(local_server.store_path)])
    report = json.loads(result.stdout[result.stdout.index("{"):])
    rows = {(r["stage"], r["metric"]): r for r in report["rows"]}
    assert rows[("feedback", "thumbs_up_rate_latest")]["value"] == 0.0
    assert rows[("feedback", "thumbs_up_rate_latest")]["status"] == "fail"
    assert rows[("feedback", "citation_ctr")]["value"] > 0

    # the run browser shows the feedback stage with its verdicts; the dashboard draws its plots
    page.goto(local_server.url + "/#/runs/browser-run")
    page.wait_for_selector("#run-stages h3:has-text('feedback')", timeout=10000)
    assert page.locator("#run-stages .badge.warn, #run-stages .badge.block").count() >= 1
    page.goto(local_server.url + "/#/feedback")
    page.wait_for_selector("#chart-down svg circle", timeout=10000)
    assert page.locator("#chart-tags svg rect").count() == 3
    assert page.locator("#chart-ctr svg circle").count() >= 1
    assert errors == [] and external == []
    page.close()
