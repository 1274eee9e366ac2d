"""Every YAML a user gives is read by one bounded reader: an alias bomb costs nothing and echoes nothing."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hoprag.errors import ConfigError, HopragError, InputError
from hoprag.evaluation.release import load_policy
from hoprag.gates.thresholds import load_thresholds
from hoprag.llm.pricing import load_price_table
from hoprag.service.tokens import load_tokens
from hoprag.yaml_input import MAX_BYTES, MAX_NODES, parse_yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "hoprag"
HOPRAG = Path(sys.executable).with_name("hoprag")

# nine levels of nine aliases: 9**9 = 387,420,489 strings in 700 bytes
LAUGHS = "".join(
    f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
    for prev, name in zip("abcdefgh", "bcdefghi")
)
BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + LAUGHS


def _bomb_under(section: str) -> str:
    return BOMB + section


BOMBS = {
    "thresholds.yaml": (load_thresholds, _bomb_under("retrieve:\n  nDCG@10: {min: *i}\n")),
    "policy.yaml": (load_policy, _bomb_under("min:\n  chain_coverage: *i\n")),
    "prices.yaml": (load_price_table, _bomb_under("default: {input_per_million: *i, output_per_million: 1}\n")),
    "tokens.yaml": (load_tokens, _bomb_under("tokens:\n  - {token: *i, name: x}\n")),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_an_alias_bomb_is_refused_fast_and_echoed_in_a_line(name: str, tmp_path: Path) -> None:
    loader, text = BOMBS[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    start = time.perf_counter()
    with pytest.raises(HopragError) as info:
        loader(path)
    assert time.perf_counter() - start < 1.0
    message = str(info.value)
    assert f"more than {MAX_NODES:,} values once its YAML aliases" in message and "Fix: " in message
    assert len(message) < 400 and "lol" not in message


def test_a_self_referencing_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("min: &m {chain_coverage: 0.5, more: *m}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"alias \(\*name\) inside the value it names.*Fix: remove the self-reference"):
        load_policy(path)


def test_aliases_within_the_budget_read_as_before() -> None:
    text = "base: &b {min: 0.5, mode: warn}\nretrieve:\n  nDCG@10: *b\n  Recall@10: {<<: *b, min: 0.6}\n"
    assert parse_yaml(text, source="t.yaml", what="thresholds file", fix="-") == {
        "base": {"min": 0.5, "mode": "warn"},
        "retrieve": {"nDCG@10": {"min": 0.5, "mode": "warn"}, "Recall@10": {"min": 0.6, "mode": "warn"}},
    }
    # expanded: a is 1 + 9 nodes, b 1 + 9 * 10, c 1 + 3 * 91, with the root and its three keys 379 in all
    small = 'a: &a [1,2,3,4,5,6,7,8,9]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b]\n'
    assert len(parse_yaml(small, source="s", what="x", fix="-")["c"]) == 3
    assert parse_yaml(small, source="s", what="x", fix="-", max_nodes=379)["c"][0][0] == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    with pytest.raises(InputError, match="more than 378 values"):
        parse_yaml(small, source="s", what="x", fix="-", max_nodes=378)


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "thresholds.yaml"
    with path.open("w", encoding="utf-8") as handle:
        handle.write("# " + "x" * (MAX_BYTES + 10) + "\n")
    with pytest.raises(ConfigError, match=rf"thresholds file is {MAX_BYTES + 13:,} bytes; .* at most {MAX_BYTES:,}\. Fix: "):
        load_thresholds(path)


def test_a_long_bad_value_is_quoted_in_at_most_200_characters(tmp_path: Path) -> None:
    path = tmp_path / "thresholds.yaml"
    path.write_text("retrieve:\n  nDCG@10: {min: " + "9" * 50_000 + "x}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_thresholds(path)
    assert len(str(info.value)) < 500 and "Fix: " in str(info.value)
    path.write_text("retrieve:\n  nDCG@10: {min: [" + ", ".join(["1"] * 20_000) + "]}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_thresholds(path)
    assert len(str(info.value)) < 500 and "Fix: " in str(info.value)


def test_a_bomb_on_the_command_line_costs_little(tmp_path: Path) -> None:
    path = tmp_path / "thresholds.yaml"
    path.write_text(BOMBS["thresholds.yaml"][1], encoding="utf-8")
    done = subprocess.run([str(HOPRAG), "gate", "--run", "r1", "--thresholds", str(path),
                           "--store", str(tmp_path / "store.db")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "alias" in done.stderr and "Fix:" in done.stderr and len(done.stderr) < 1000


def test_no_reader_calls_pyyaml_itself() -> None:
    """Every YAML reader goes through hoprag.yaml_input (a new one that calls PyYAML fails here)."""
    direct = re.compile(r"\byaml\.(safe_load|load|full_load|unsafe_load|load_all|safe_load_all|compose|SafeLoader)\b")
    offenders = [
        f"{path.relative_to(SRC)}:{number}"
        for path in SRC.rglob("*.py") if path.name != "yaml_input.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if direct.search(line)
    ]
    assert not offenders, f"read YAML with hoprag.yaml_input instead: {offenders}"
