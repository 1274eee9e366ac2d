"""The Bloom filter of title keys: no false negatives, the false-positive rate its size predicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.index.bloom import BloomFilter
from hoprag.index.entities import title_key

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"


def _titles() -> list[str]:
    """The title keys of the enterprise corpus and the bundled HotpotQA sample's paragraphs."""
    titles = [json.loads(line)["title"] for line in (DATA / "enterprise" / "corpus.jsonl").read_text().splitlines()]
    for path in sorted((DATA / "hotpotqa").glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8")):
            titles.extend(title for title, _ in case["context"])
    return sorted({title_key(t) for t in titles})


def test_every_key_is_found_and_few_others_are() -> None:
    keys = _titles()
    assert len(keys) > 900
    titles = BloomFilter.of(keys)
    # 10 bits a key, rounded up to a multiple of 64
    assert titles.size == -(-len(keys) * 10 // 64) * 64 and titles.hashes == 7
    assert all(k in titles for k in keys)
    others = [f"{k} (band)" for k in keys] + [f"not a title {i}" for i in range(5000)]
    rate = sum(k in titles for k in others) / len(others)
    assert rate < 0.03  # (1 - e^(-7/10))^7 = 0.8 %


def test_an_empty_filter_holds_nothing_and_a_stored_one_reads_back() -> None:
    empty = BloomFilter.of([])
    assert empty.size == 64 and "anything" not in empty and "" not in empty
    titles = BloomFilter.of(["rush", "neil peart", "rush"])
    again = BloomFilter(titles.bits, titles.hashes)  # as read back from the index
    assert "rush" in again and "neil peart" in again and 42 not in again


def test_a_filter_built_a_batch_at_a_time_is_the_one_built_at_once() -> None:
    """A streamed build adds its title keys batch by batch, repeats across batches included."""
    from hoprag.index.bloom import BloomBuilder

    keys = _titles()
    builder = BloomBuilder()
    for lo in range(0, len(keys), 100):
        builder.add(keys[lo: lo + 100])
    builder.add(keys[:50])  # seen again in a later batch: still one key each
    streamed, whole = builder.finish(), BloomFilter.of(keys)
    assert streamed.bits == whole.bits and streamed.hashes == whole.hashes
