"""A document's valid time from its own fields, and the dates --as-of and a corpus snapshot name."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from hoprag.errors import ConfigError
from hoprag.index.valid_time import own_interval, parse_as_of, show, snapshot_date

pytestmark = pytest.mark.unit


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)


def test_the_start_is_valid_from_else_effective_date_else_timestamp_and_valid_until_counts_its_day():
    # policy-8-v1 of the enterprise corpus: issued 2024-02-15, effective 2024-03-01, valid until 2025-12-31
    meta = {"effective_date": "2024-03-01", "valid_until": "2025-12-31"}
    assert own_interval("2024-02-15", meta) == (utc(2024, 3, 1), utc(2026, 1, 1))
    assert own_interval("2024-02-15", {**meta, "valid_from": "2024-02-20"})[0] == utc(2024, 2, 20)
    assert own_interval("2024-02-15", {}) == (utc(2024, 2, 15), None)
    # a field that is not a date is skipped; contract terms are not valid time
    assert own_interval("", {"effective_date": "Q3 2025", "term_start": "2025-01-01"}) == (None, None)
    assert own_interval("2026-01-15T09:30:00+01:00", {}) == (utc(2026, 1, 15, 8, 30), None)


def test_as_of_reads_iso_dates_and_times_and_refuses_the_rest_with_the_fix():
    assert parse_as_of("2025-06-30") == utc(2025, 6, 30)
    assert parse_as_of("2025-06-30T12:00:00Z") == utc(2025, 6, 30, 12)
    assert parse_as_of("2025-06-30T12:00") == utc(2025, 6, 30, 12)  # no offset: UTC
    for bad in ("30/06/2025", "2025-02-30", "tomorrow"):
        with pytest.raises(ConfigError, match=r"is not a date\. Fix: give an ISO date"):
            parse_as_of(bad)
    assert show(utc(2025, 6, 30)) == "2025-06-30" and show(utc(2025, 6, 30, 12)) == "2025-06-30T12:00:00Z"


def test_a_snapshot_name_maps_to_the_date_it_ends_with():
    assert snapshot_date("kestrel-docs-2026-06-30") == utc(2026, 6, 30)
    assert snapshot_date("v2-2025-01-01-then-2026-02-01") == utc(2026, 2, 1)
    assert snapshot_date("kestrel-docs") is None
