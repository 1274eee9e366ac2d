from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from hoprag.errors import InputError
from hoprag.gates.checks.feedback import parse_event, read_feedback, window_start
from hoprag.gates.feedback_import import import_feedback
from hoprag.store import RunStore

DATA = Path(__file__).resolve().parents[1] / "data"
pytestmark = pytest.mark.unit


def test_fixture_metrics(tmp_path: Path) -> None:
    with RunStore(tmp_path / "s.db") as store:
        summary = import_feedback(store, DATA / "gates_feedback.jsonl")
        assert summary["run-fb"][0] == 13
        m = {x.name: x.value for x in store.metrics("run-fb", stage="feedback")}
        assert import_feedback(store, DATA / "gates_feedback.jsonl")["run-fb"][0] == 0  # idempotent
    # thumbs: 1 May up, up, down; 2 May up, down, down, down -> 3/7 overall, 2/3 then 1/4
    assert m["thumbs_up_rate"] == pytest.approx(3 / 7)
    assert m["thumbs_up_rate/2024-05-01T00:00:00+00:00"] == pytest.approx(2 / 3)
    assert m["thumbs_up_rate_latest"] == pytest.approx(1 / 4)
    assert m["thumbs_up_rate_change"] == pytest.approx(1 / 4 - 2 / 3)
    assert (m["tags.retrieve"], m["tags.generate"], m["tags.ingest"]) == (1, 2, 0)
    assert m["tag.missing_citation"] == 1
    assert m["citation_ctr"] == pytest.approx(1 / 5)  # one click, views showed 3 + 2 citations


def test_bad_events_name_line_and_valid_values(tmp_path: Path) -> None:
    path = tmp_path / "fb.jsonl"
    path.write_text('{"run_id": "r", "type": "thumbs", "value": "up"}\n{"run_id": "r", "type": "tag", "tag": "slow"}\n',
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"fb.jsonl:2: unknown issue tag 'slow' \(field 'tag'\). Fix: use one of: wrong_document"):
        read_feedback(path)
    with pytest.raises(InputError, match="run_id"):
        parse_event({"type": "thumbs", "value": "up"})
    with pytest.raises(InputError, match="unknown feedback type"):
        parse_event({"type": "like", "run_id": "r"})


def test_windows() -> None:
    ts = datetime(2024, 5, 1, 15, 30, tzinfo=timezone.utc)
    assert window_start(ts, "1d") == datetime(2024, 5, 1, tzinfo=timezone.utc)
    assert window_start(ts, "1h") == datetime(2024, 5, 1, 15, tzinfo=timezone.utc)
    with pytest.raises(InputError):
        window_start(ts, "fortnight")
