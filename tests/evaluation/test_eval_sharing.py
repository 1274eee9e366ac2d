"""`hoprag traces redact`: a shareable copy of a traces file that evaluates to the same chain and hop metrics."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.datasets.schema import load_cases
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.io.traces import read_traces
from hoprag.security.redaction import parse_patterns, redact_text

ENTERPRISE = Path(__file__).parents[2] / "data" / "enterprise"
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.fixture(scope="module")
def raw_traces(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sharing")
    shutil.copy(ENTERPRISE / "corpus.jsonl", root / "corpus.jsonl")
    for argv in (["index", str(root / "corpus.jsonl"), "--out", str(root / "ix"), "--quiet"],
                 ["run", str(root / "ix"), str(ENTERPRISE / "cases.jsonl"), "--out", str(root / "raw.jsonl"),
                  "--no-redact", "--quiet"]):
        try:
            main(argv)
        except SystemExit as exc:
            assert not exc.code
    return root / "raw.jsonl"


def test_user_patterns_are_typed_numbered_and_never_reach_into_placeholders() -> None:
    patterns = parse_patterns(["TICKET=KD-[0-9]{4}", "GREEDY=\\w+_\\d"])
    text = "write to ops@kestrel-dynamics.example about KD-1234, KD-1234 and KD-0042 (see <EMAIL_7>)"
    assert redact_text(text, patterns=patterns) == (
        "write to <EMAIL_8> about <TICKET_1>, <TICKET_1> and <TICKET_2> (see <EMAIL_7>)"
    )
    once = redact_text(text, patterns=patterns)
    assert redact_text(once, patterns=patterns) == once


def test_a_redacted_copy_has_no_address_keeps_ids_and_evaluates_the_same(raw_traces, tmp_path, capsys) -> None:
    out = tmp_path / "shared.jsonl"
    code, output = cli(["redact", str(raw_traces), "--out", str(out), "--pattern", "PLAN=KP-[0-9]{3}"], capsys)
    assert code == 0, output
    raw_text, shared_text = raw_traces.read_text(encoding="utf-8"), out.read_text(encoding="utf-8")
    assert EMAIL.search(raw_text) and not EMAIL.search(shared_text)
    assert "KP-214" in raw_text and "KP-214" not in shared_text and "<PLAN_1>" in shared_text
    assert json.loads(shared_text.splitlines()[0]).get("hoprag_traces") == 1  # the run header is kept
    raw, shared = read_traces(raw_traces), read_traces(out)
    assert [t.case_id for t in raw] == [t.case_id for t in shared]
    assert [[e.chunk_id for e in t.evidence] for t in raw] == [[e.chunk_id for e in t.evidence] for t in shared]
    cases = load_cases(ENTERPRISE / "cases.jsonl")
    before = evaluate_chains(cases, raw, ks=(2, 5, 10)).aggregate
    after = evaluate_chains(cases, shared, ks=(2, 5, 10)).aggregate
    chain = [m for m in before if m.startswith(("chain_coverage", "hop", "path_precision", "passage_recall", "all_passages"))]
    assert chain and {m: before[m] for m in chain} == {m: after[m] for m in chain}
    assert "redacted 16 of 16 traces" in output and "email=" in output and "PLAN=" in output


def test_redacting_in_place_and_twice_changes_nothing_more(raw_traces, tmp_path, capsys) -> None:
    copy = tmp_path / "t.jsonl"
    shutil.copy(raw_traces, copy)
    assert cli(["redact", str(copy), "--out", str(copy)], capsys)[0] == 0
    once = copy.read_text(encoding="utf-8")
    assert cli(["redact", str(copy), "--out", str(copy)], capsys)[0] == 0
    assert copy.read_text(encoding="utf-8") == once
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("bad", ["no-equals", "=KD-1", "EMAIL=x", "X=(", "EMPTY=a*", "lower-case!=x"])
def test_a_bad_pattern_is_one_clear_error(bad, raw_traces, tmp_path, capsys) -> None:
    code, output = cli(["redact", str(raw_traces), "--out", str(tmp_path / "o.jsonl"), "--pattern", bad], capsys)
    assert code == 2 and "error:" in output and "Traceback" not in output
    assert not (tmp_path / "o.jsonl").exists()
