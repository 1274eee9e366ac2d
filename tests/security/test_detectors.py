"""The detectors find each kind of PII and credential, and nothing in ordinary text or the bundled corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.security.credentials import mask_credentials
from hoprag.security.pii import scan_text

DATA = Path(__file__).resolve().parents[2] / "data"

pytestmark = pytest.mark.unit


def kinds(text: str) -> list[tuple[str, str]]:
    return [(f.kind, text[f.start:f.end]) for f in scan_text(text)]


@pytest.mark.parametrize(("text", "found"), [
    ("write to zoë@exämple.com today", ("email", "zoë@exämple.com")),
    ("联系 用户@例子.广告 谢谢", ("email", "用户@例子.广告")),
    ("mail ivan@пример.рф now", ("email", "ivan@пример.рф")),
    ("punycode test@xn--e1afmkfd.xn--p1ai ok", ("email", "test@xn--e1afmkfd.xn--p1ai")),
    ("call +44 20 7946 0958 now", ("phone", "+44 20 7946 0958")),
    ("call (020) 7946 0958 now", ("phone", "(020) 7946 0958")),
    ("call 020 7946 0958 now", ("phone", "020 7946 0958")),
    ("mobile 07700 900123 now", ("phone", "07700 900123")),
    ("Berlin 030/1234567 now", ("phone", "030/1234567")),
    ("Paris 01 23 45 67 89 now", ("phone", "01 23 45 67 89")),
    ("toll-free 1-800-555-0199 now", ("phone", "1-800-555-0199")),
    ("card 4111 1111 1111 1111 born 1966", ("card", "4111 1111 1111 1111")),
    ("in 1966 4111 1111 1111 1111 was used", ("card", "4111 1111 1111 1111")),  # the run is cut back to the card
    ("iban GB82 WEST 1234 5698 7654 32 ok", ("iban", "GB82 WEST 1234 5698 7654 32")),
    ("ssn 123-45-6789 ok", ("national_id", "123-45-6789")),
])
def test_each_kind_is_found(text: str, found: tuple[str, str]) -> None:
    assert kinds(text) == [found]


@pytest.mark.parametrize("text", [
    "The film was released on 2021-03-04 and again in 1998-2001.",
    "Version 2.10.3 (build 0.9.12) scored 0.93, 0.87 and 1.00 on pages 123-145.",
    "ISBN 0-306-40615-2, ISBN 978-0-306-40615-7 and ISBN 0306406152 are the same book.",
    "Population 275,000 2015 2015; area 1,234.5 km2; elevation 0 m.",
    "The 1966 season ran from 12 March to 04 June, 10 000 people attended.",
    "Scores: 06-12, 15-18, 20-22; the marathon record is 2:01:09.",
    "Card games 4111 and 1111 were played; a card number 4111 1111 1111 1112 fails the Luhn check.",
    "GB82 WEST 1234 5698 7654 33 fails its IBAN check digits.",
    "Contact the bearer of bad news; prior authorization: required for surgery.",
    "The api key is described in the manual; the token ring network; a secret garden.",
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert kinds(text) == []
    assert mask_credentials(text) == text


@pytest.mark.parametrize(("text", "masked"), [
    ("http://user:s3cret@127.0.0.1:9/v1", "http://user:***@127.0.0.1:9/v1"),
    ("http://user:p@ss@host/x", "http://user:***@host/x"),
    ("https://ghtoken123@github.com/org/repo", "https://***@github.com/org/repo"),
    ("https://h/x?api_key=abc&lang=en&sig=ZZZ", "https://h/x?api_key=***&lang=en&sig=***"),
    ("https://h/x?key=AIzaSyD-1&token=t0k&access_token=a1", "https://h/x?key=***&token=***&access_token=***"),
    ("Authorization: Bearer abcdef1234567890xyz", "Authorization: Bearer ***"),
    ("HOPRAG_API_KEY=sk-abcdefghijklmnop1234", "HOPRAG_API_KEY=***"),
    ('{"api_key": "abcd1234"}', '{"api_key": "***"}'),
    ("key sk-proj-abcdefghijklmnopqrstu used", "key *** used"),
    ("http://user:***@h/v1", "http://user:***@h/v1"),  # masking masked text changes nothing
])
def test_credentials_are_masked(text: str, masked: str) -> None:
    assert mask_credentials(text) == masked


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


@pytest.mark.slow
def test_the_bundled_benchmark_corpora_hold_no_pii_and_no_credential() -> None:
    """Every string of the HotpotQA, 2Wiki and MuSiQue samples (dev and train): no finding at all.

    Dates, years, page ranges, scores and numbers in tables are everywhere in them; a detector that
    fires on one would rewrite a passage of a run's traces that holds nothing to redact.
    """
    texts: set[str] = set()
    for path in sorted(DATA.rglob("*.json*")):
        if "enterprise" in path.parts:
            continue
        if path.suffix == ".json":
            texts.update(_strings(json.loads(path.read_text(encoding="utf-8"))))
        else:
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    texts.update(_strings(json.loads(line)))
    assert len(texts) > 20_000
    hits = [(t[f.start - 20:f.end + 20], f.kind) for t in texts for f in scan_text(t)]
    assert hits == []
    assert [t for t in texts if mask_credentials(t) != t] == []


def test_the_enterprise_corpus_findings_are_its_five_mailboxes() -> None:
    found: list[tuple[str, str]] = []
    for line in (DATA / "enterprise" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        found += kinds(json.loads(line).get("text", ""))
    # read by hand from the corpus: documents email-3 (two), email-8 (two) and email-11 (one)
    assert found == [("email", f"{box}@kestrel-dynamics.example")
                     for box in ("onboarding", "marine-se", "legal-ops", "ig", "archive-accounts")]
