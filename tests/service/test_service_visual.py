"""The page as people see it: screenshots in real headless Chromium at 1280 and 390 px, light and dark, of
the ask page, an answer with a citation open, the evidence trail, a run's page and the feedback dashboard,
compared with the committed images in ``tests/service/screenshots/`` (see docs/contributing.md).

Images are compared at half size (what font hinting changes is mostly sub-pixel) as the share of pixels
whose colour moved by more than :data:`PIXEL_STEP` on some channel: up to :data:`TOLERANCE` passes, a
moved panel or a collapsed column does not. What changes between two runs of the same page (latencies,
clock times) is masked. ``HOPRAG_UPDATE_SCREENSHOTS=1`` writes the images anew instead of comparing;
``HOPRAG_SCREENSHOTS=DIR`` keeps the full-size screenshots and the diffs of failures there.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_helpers import LiveServer, start_service
from test_service_browser import QUESTION, browser  # noqa: F401 - the module's Chromium

pytestmark = [pytest.mark.integration, pytest.mark.slow]
BASELINES = Path(__file__).parent / "screenshots"
#: a pixel differs when one channel moved by more than this (of 255): anti-aliasing moves less
PIXEL_STEP = 48
#: the share of differing pixels an image may have: font hinting stays well below it, a layout break does not
TOLERANCE = 0.03
VIEWS = ("ask", "answer", "trail", "run", "dashboard")


def differing_share(actual, expected) -> tuple[float, object]:
    """The share of pixels that differ (sizes differing count the non-overlapping part) and the diff mask."""
    import numpy as np

    a = np.asarray(actual.convert("RGB"), dtype=np.int16)
    b = np.asarray(expected.convert("RGB"), dtype=np.int16)
    h, w = max(a.shape[0], b.shape[0]), max(a.shape[1], b.shape[1])
    pad_a, pad_b = np.full((h, w, 3), -999, np.int16), np.full((h, w, 3), 999, np.int16)
    pad_a[:a.shape[0], :a.shape[1]], pad_b[:b.shape[0], :b.shape[1]] = a, b
    moved = np.abs(pad_a - pad_b).max(axis=2) > PIXEL_STEP
    return float(moved.mean()), moved


def test_differing_share_counts_moved_pixels_and_size_changes() -> None:
    from PIL import Image

    white = Image.new("RGB", (10, 10), "white")
    one_dot = white.copy()
    one_dot.putpixel((3, 3), (0, 0, 0))
    faint = white.copy()
    faint.putpixel((3, 3), (230, 230, 230))  # 25 of 255: anti-aliasing, not a change
    assert differing_share(one_dot, white)[0] == pytest.approx(1 / 100)
    assert differing_share(faint, white)[0] == 0.0
    taller = Image.new("RGB", (10, 12), "white")  # two more rows of 10: 20 of 120 pixels
    assert differing_share(taller, white)[0] == pytest.approx(20 / 120)


def _half(png: bytes):
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    return image.resize((max(1, image.width // 2), max(1, image.height // 2)), Image.Resampling.BOX)


def check_image(png: bytes, name: str) -> None:
    """Compare one screenshot with its baseline (or write it with HOPRAG_UPDATE_SCREENSHOTS=1)."""
    from PIL import Image

    keep = os.environ.get("HOPRAG_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / f"{name}.png").write_bytes(png)
    actual = _half(png)
    baseline = BASELINES / f"{name}.png"
    if os.environ.get("HOPRAG_UPDATE_SCREENSHOTS") == "1":
        BASELINES.mkdir(exist_ok=True)
        actual.save(baseline, optimize=True)
        return
    if not baseline.is_file():
        pytest.fail(f"no baseline image {baseline.name}; Fix: run this test with HOPRAG_UPDATE_SCREENSHOTS=1, "
                    "look at the images it writes, and commit them")
    share, moved = differing_share(actual, Image.open(baseline))
    if share > TOLERANCE and keep:
        Image.fromarray((moved * 255).astype("uint8")).save(Path(keep) / f"{name}-diff.png")
    assert share <= TOLERANCE, (f"{name}: {share:.1%} of pixels differ from {baseline.name} (tolerance {TOLERANCE:.0%}); "
                                "if the change is meant, regenerate with HOPRAG_UPDATE_SCREENSHOTS=1 and look at it")


@pytest.fixture(scope="module")
def visual_server(enterprise_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server of its own (its dashboard counts only this module's answers) with three gated runs of its
    index: stage metrics that pass, warn (chunk length rising) and block (an error rate in the last)."""
    from hoprag.metrics import Metric

    store = tmp_path_factory.mktemp("visual-store") / "store.db"
    for server in start_service(enterprise_index, store, clearance="internal", run_id="visual-run"):
        runs = server.state.store.store
        artifact = server.state.index.manifest.artifact_id
        history = {("ingest", "schema_violations"): (0, 0, 0), ("ingest", "pii_hits"): (0, 0, 0),
                   ("ingest", "null_rate.text"): (0, 0, 0), ("ingest", "duplicate_frac"): (0.0, 0.01, 0.005),
                   ("chunk", "len_chars_p95"): (980, 1110, 1290), ("chunk", "len_chars_max"): (1150, 1180, 1190),
                   ("chunk", "below_floor_frac"): (0.0, 0.004, 0.002), ("embed", "zero_norm_frac"): (0, 0, 0),
                   ("embed", "nonfinite_frac"): (0, 0, 0), ("index", "unindexed_documents"): (0, 0, 0),
                   ("retrieve", "P@5"): (0.31, 0.33, 0.30), ("retrieve", "nDCG@10"): (0.58, 0.61, 0.55),
                   ("retrieve", "Success@10"): (0.90, 0.92, 0.88), ("retrieve", "RR"): (0.62, 0.66, 0.60),
                   ("generate", "faithfulness"): (0.93, 0.95, 0.91), ("generate", "citation_coverage"): (0.97, 0.98, 0.96),
                   ("generate", "error_rate"): (0.0, 0.0, 0.05), ("generate", "latency_ms_p95"): (900, 760, 1210),
                   ("feedback", "thumbs_up_rate_latest"): (0.8, 0.75, 0.7), ("feedback", "citation_ctr"): (0.2, 0.15, 0.12)}
        for n in range(3):
            run_id = f"gate-{n + 1}"
            runs.create_run(run_id, kind="gate", artifact_id=artifact)
            runs.add_metrics(Metric(run_id, stage, name, values[n]) for (stage, name), values in history.items())
            runs.finish_run(run_id)
        yield server


#: what differs between two runs of one page (clock times, ids, counts that grow), masked per view
MASKS = {"answer": (), "trail": (), "run": ("#run-meta .run-time", "#run-meta .run-artifact"),
         "dashboard": ("#dash-run", "#chart-down svg text[text-anchor=start]", "#chart-ctr svg text[text-anchor=start]",
                       "#chart-tags svg text:not([text-anchor])")}


def _masks(page, view: str) -> list:
    return [page.locator(s) for s in MASKS[view]]


def _steady_timings(route) -> None:
    """The answer's timings replaced by fixed ones (hop N: 10 ms from 1 + 10(N-1)), so its waterfall and
    latency draw the same on every run; everything else is the server's answer."""
    response = route.fetch()
    blocks = response.text().split("\n\n")
    for n, block in enumerate(blocks):
        head, _, data = block.partition("\ndata: ")
        if head != "event: answer":
            continue
        answer = json.loads(data)
        hops = sorted({s["hop"] for s in answer["steps"]})
        timings = {"planning_ms": 1.0, "retrieval_ms": 10.0 * len(hops), "ranking_ms": 3.0, "synthesis_ms": 7.0}
        for i, hop in enumerate(hops):
            judge = 2.0 if f"hop{hop}.judge_ms" in answer["timings"] else 0.0
            timings |= {f"hop{hop}.start_ms": 1.0 + 10 * i, f"hop{hop}.retrieval_ms": 10.0 - judge,
                        f"hop{hop}.end_ms": 11.0 + 10 * i, **({f"hop{hop}.judge_ms": judge} if judge else {})}
        answer.update(timings=timings, latency_ms=11.0 + 10 * len(hops))
        blocks[n] = head + "\ndata: " + json.dumps(answer)
    route.fulfill(response=response, body="\n\n".join(blocks))


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
def test_screenshots_match_the_committed_images(browser, visual_server: LiveServer, width: int,  # noqa: F811
                                                scheme: str) -> None:
    """Each view at 1280 and 390 px, light and dark, against its baseline; nothing runs off the screen at
    390 px, the document opens as a sheet there, and dark mode is the system's."""
    server = visual_server
    page = browser.new_page(viewport={"width": width, "height": 844 if width < 700 else 900}, color_scheme=scheme)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.route("**/api/ask/stream", _steady_timings)
    page.goto(server.url + "/")
    page.wait_for_selector("#whoami:has-text('internal')")
    background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert (background == "rgb(18, 21, 28)") == (scheme == "dark")
    name = f"{width}-{scheme}"
    check_image(page.screenshot(), f"ask-{name}")

    page.fill("#question", QUESTION)
    page.click("#ask-button")
    page.wait_for_selector("#answer-text .cite", timeout=20000)
    page.locator("#answer-text .cite").first.click()
    page.wait_for_selector("#cited-span", timeout=10000)
    page.evaluate("() => window.scrollTo(0, 0)")
    check_image(page.screenshot(), f"answer-{name}")
    panel = page.locator("#doc").bounding_box()
    if width < 700:  # a sheet across the screen's width, over its lower part
        assert panel["width"] >= width - 2 and panel["y"] > 100
    else:
        assert panel["x"] > width / 2
    page.keyboard.press("Escape")
    # one thumbs-down with a tag per answer: the dashboard has a rate, a bar and a click-through rate
    page.click("#thumbs-down")
    page.check("#tags input[value='wrong_document']")
    page.click("#send-feedback")
    page.wait_for_selector("#feedback-status:has-text('Thanks')", timeout=10000)
    check_image(page.locator("#trail").screenshot(), f"trail-{name}")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width

    for view, path, ready in (("run", "/#/runs/gate-3", "#run-tiles .tile"),
                              ("dashboard", "/#/feedback", "#dash-run:has-text('events')")):
        page.goto(server.url + path)
        page.wait_for_selector(ready, timeout=10000)
        check_image(page.screenshot(full_page=True, mask=_masks(page, view)), f"{view}-{name}")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    assert errors == []
    page.close()
