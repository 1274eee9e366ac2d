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
    # a failed load (the browser's own /favicon.ico request was a 404) is a console error
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
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
    # the trail as a trace view: a waterfall row per phase and hop, each passage kept once, the question
    # apart from the bridge it was conditioned on
    assert page.locator("#trail .tr-row .wf").count() >= 4 and page.locator("#trail .wf-judge").count() >= 1
    kept = [li.get_attribute("data-chunk") for li in page.locator("#trail li.kept").all()]
    assert kept and len(kept) == len(set(kept))
    assert page.locator("#trail .chip").count() >= 1
    for query in page.locator("#trail .q").all_inner_texts():
        words = query.split()
        assert words[:2] != words[2:4] or not words  # no bridge repeated at the head of a query
    answer = page.inner_text("#answer-text")
    assert answer.strip()

    # a citation opens its document with the cited span highlighted, and the click is logged
    first = page.locator("#answer-text .cite").first
    chunk_id = first.get_attribute("data-chunk")
    first.click()
    page.wait_for_selector("#cited-span", timeout=10000)
    highlighted = page.inner_text("#cited-span")
    chunk = local_server.state.index.chunks[chunk_id]
    # the sentence the claim is, inside its passage: not the whole passage
    assert highlighted.strip() in chunk.text and len(highlighted.strip()) < len(chunk.text.strip())
    assert any(highlighted.strip() == claim.strip() for claim in page.locator("#claims li").all_inner_texts()
               for claim in [claim.rstrip("0123456789")])
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
    page.wait_for_selector("#run-tiles .tile:has-text('feedback')", timeout=10000)
    assert page.locator("#run-tiles .tile").count() == 7  # the seven stages, tiles first
    assert page.locator("#run-tiles .tile.warn:has-text('feedback'), #run-tiles .tile.block:has-text('feedback')").count() == 1
    assert not page.locator("#run-stages").is_visible()  # the full table is one click below
    page.click("#run-table-summary")
    page.wait_for_selector("#run-stages h3:has-text('feedback')")
    assert page.locator("#run-stages .badge.warn, #run-stages .badge.block").count() >= 1
    assert "no thresholds loaded" not in page.inner_text("#run-gate")
    page.goto(local_server.url + "/#/feedback")
    page.wait_for_selector("#chart-down svg circle", timeout=10000)
    assert page.locator("#chart-tags svg rect").count() == 3
    assert page.locator("#chart-ctr svg circle").count() >= 1
    assert errors == [] and external == []
    page.close()


def test_feedback_empty_questions_escape_and_errors_in_the_page(browser, local_server: LiveServer) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(local_server.url + "/")
    page.wait_for_selector("#whoami:has-text('internal')")
    # an empty question says so
    page.click("#ask-button")
    page.wait_for_selector("#error:has-text('the question is empty')")
    # the feedback form of one answer does not carry over to the next
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    page.wait_for_selector("#answer-text .cite", timeout=20000)
    page.click("#thumbs-down")
    page.check("#tags input[value='wrong_document']")
    page.fill("#comment", "the wrong contract")
    page.click("#ask-button")  # the same question again: a new answer
    page.wait_for_selector("#progress li.ev-hop", timeout=20000)
    page.wait_for_selector("#answer-text .cite", timeout=20000)
    assert page.locator("#tags input:checked").count() == 0 and page.input_value("#comment") == ""
    assert page.locator(".thumb.chosen").count() == 0
    page.click("#thumbs-up")
    page.click("#send-feedback")
    page.wait_for_selector("#feedback-status:has-text('Thanks')", timeout=10000)
    trace_id = page.evaluate("() => current.trace_id")
    sent = [e for e in local_server.state.store.store.feedback("browser-run") if e.case_id == trace_id]
    assert sorted(e.kind for e in sent) == ["thumbs", "view"] and [e.value for e in sent if e.kind == "thumbs"] == ["up"]
    # Escape closes the document panel and gives the focus back to the citation
    page.locator("#answer-text .cite").first.click()
    page.wait_for_selector("#doc:not(.hidden) #cited-span", timeout=10000)
    page.keyboard.press("Escape")
    page.wait_for_selector("#doc.hidden", state="attached")
    assert page.evaluate("() => document.activeElement.classList.contains('cite')")
    # the server gone: every view says so instead of showing an empty table
    page.route("**/api/**", lambda route: route.abort())
    page.goto(local_server.url + "/#/runs")
    page.reload()
    page.wait_for_selector("#runs-state:has-text('cannot be shown')", timeout=10000)
    assert "cannot be reached" in page.inner_text("#error") and page.inner_text("#whoami") == "offline"
    page.goto(local_server.url + "/#/feedback")
    page.wait_for_selector("#dash-state:has-text('cannot be shown')", timeout=10000)
    page.unroute("**/api/**")
    assert errors == []
    page.close()


def test_a_token_is_kept_for_the_tab_only_and_a_bad_one_says_so(browser, server: LiveServer) -> None:
    from service_helpers import TOKENS

    context = browser.new_context()
    page = context.new_page()
    page.goto(server.url + "/")
    page.wait_for_selector("#whoami:has-text('sign in')")
    page.fill("#token", "not-a-token-at-all")
    page.dispatch_event("#token", "change")
    page.wait_for_selector("#whoami:has-text('token refused')")
    page.fill("#token", TOKENS["internal"])
    page.dispatch_event("#token", "change")
    page.wait_for_selector("#whoami:has-text('ines')")
    assert page.evaluate("() => [localStorage.getItem('hoprag-token'), sessionStorage.getItem('hoprag-token')]") == \
        [None, TOKENS["internal"]]
    other = context.new_page()  # another tab of the same browser: not signed in
    other.goto(server.url + "/")
    other.wait_for_selector("#whoami:has-text('sign in')")
    page.click("#sign-out")
    page.wait_for_selector("#whoami:has-text('sign in')")
    assert page.evaluate("() => sessionStorage.getItem('hoprag-token')") is None
    context.close()


def test_the_dashboard_charts_take_the_themes_colours(browser, local_server: LiveServer) -> None:
    import httpx

    # one stored answer with a thumbs-down and a citation shown: every chart has a point or a bar
    answer = httpx.post(local_server.url + "/api/ask", json={"question": QUESTION, "store": True}, timeout=60).json()
    sent = httpx.post(local_server.url + "/api/feedback", json={"trace_id": answer["trace_id"], "thumbs": "down",
                                                                "tags": ["wrong_document"]}, timeout=30)
    assert sent.status_code == 200, sent.text
    seen = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme)
        page = context.new_page()
        page.goto(local_server.url + "/#/feedback")
        page.wait_for_selector("#chart-down svg circle", timeout=10000)
        seen[scheme] = page.evaluate("""() => {
            const css = name => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
            const fill = sel => getComputedStyle(document.querySelector(sel)).fill;
            const probe = document.createElement('div'); document.body.append(probe);
            const rgb = value => { probe.style.color = value; return getComputedStyle(probe).color; };
            return {down: fill('#chart-down svg circle'), ctr: fill('#chart-ctr svg circle'),
                    bar: fill('#chart-tags svg rect'), block: rgb(css('--block')), ok: rgb(css('--ok')),
                    accent: rgb(css('--accent'))};
        }""")
        context.close()
    for scheme, s in seen.items():  # each chart in its theme's colour, not a fixed light-mode one
        assert (s["down"], s["ctr"], s["bar"]) == (s["block"], s["ok"], s["accent"]), (scheme, s)
    assert seen["light"]["down"] == "rgb(192, 34, 43)" and seen["dark"]["down"] != seen["light"]["down"]


def test_the_single_shot_engines_trail_falls_back_to_the_steps_windows(browser, local_server: LiveServer) -> None:
    import httpx

    # the single-shot engine records no per-hop timings: its hop's bar is the steps' own window
    answer = httpx.post(local_server.url + "/api/ask", json={"question": QUESTION, "engine": "single"}, timeout=60).json()
    assert answer["timings"] == {} and {s["hop"] for s in answer["steps"]} == {1}
    step = answer["steps"][0]
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(local_server.url + "/")
    page.wait_for_selector("#whoami:has-text('internal')")
    page.evaluate("a => renderTrail(a)", answer)
    assert page.locator("#trail").is_visible()
    assert page.locator("#trail .tr-label").all_inner_texts() == ["", "Hop 1"]  # the axis, then the one hop
    bar = page.locator("#trail details.hop svg.wf rect")
    assert bar.count() == 1 and bar.get_attribute("class") == "wf-retrieval"
    start = step["cumulative_ms"] - step["latency_ms"]
    assert float(bar.get_attribute("x")) == pytest.approx(start / max(answer["latency_ms"], step["cumulative_ms"]) * 1000,
                                                          abs=0.01)
    assert float(bar.get_attribute("width")) >= 2  # a visible bar, however short the search
    kept = len(step["kept"])
    assert page.inner_text("#trail .hop-note") == f"1 search · {kept} passage{'' if kept == 1 else 's'} kept"
    assert page.locator("#trail li.kept").count() == kept and errors == []
    page.close()


def test_an_error_far_down_the_answer_is_shown_in_sight(browser, local_server: LiveServer) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 700})
    page.goto(local_server.url + "/")
    page.wait_for_selector("#whoami:has-text('internal')")
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    page.wait_for_selector("#answer-text .cite", timeout=20000)
    page.wait_for_function("() => !document.querySelector('#ask-button').disabled", timeout=20000)
    page.route("**/api/**", lambda route: route.abort())  # the server gone after the answer
    page.click("#thumbs-up")
    page.click("#send-feedback")
    page.wait_for_selector("#feedback-status:has-text('Not sent')", timeout=10000)
    # the message is in the window, not at the foot of a page thousands of pixels long
    box = page.locator("#error").bounding_box()
    assert page.evaluate("() => document.documentElement.scrollHeight") > 1400
    assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= 700, box
    assert "cannot be reached" in page.inner_text("#error") and page.inner_text("#whoami") == "offline"
    page.unroute("**/api/**")  # back again: the next call says who the caller is
    page.locator("#answer-text .cite").first.click()
    page.wait_for_selector("#whoami:has-text('internal')", timeout=10000)
    page.close()
