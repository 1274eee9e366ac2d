"""2Wiki answer aliases read from the dataset's alias file (``hoprag import 2wiki --aliases``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoprag.cli import app
from hoprag.datasets.importers import import_dataset
from hoprag.datasets.schema import load_cases
from hoprag.errors import ConfigError, InputError
from hoprag.evaluation.answers import answer_em, answer_f1
from hoprag.records import Answer, Trace

pytestmark = pytest.mark.unit
TWOWIKI = Path(__file__).parents[1] / "data" / "2wiki_dev_slice.json"
MONTREAL = "099f34280bda11eba7f7acde48001122"  # answer 'Montreal, Quebec', answer_id Q340


def write_aliases(path: Path) -> Path:
    rows = [
        {"Q_id": "Q340", "aliases": ["Montreal", "Montréal", "Montreal, Quebec"], "demonyms": ["Montrealer"]},
        {"Q_id": "Q999", "aliases": ["unused"], "demonyms": []},
    ]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_aliases_of_the_answer_id_become_gold_strings(tmp_path: Path) -> None:
    result = import_dataset("2wiki", [TWOWIKI], aliases=write_aliases(tmp_path / "id_aliases.json"))
    case = next(c for c in result.cases if c.case_id == MONTREAL)
    # aliases then demonyms, deduplicated, without the answer itself
    assert case.answers == ["Montreal, Quebec"] and case.aliases == ["Montreal", "Montréal", "Montrealer"]
    assert case.metadata["answer_id"] == "Q340"
    trace = Trace(run_id="r", case_id=MONTREAL, question=case.query, answer=Answer(text="Montrealer"))
    assert answer_em(case, trace) == answer_f1(case, trace) == 1.0
    # the other four answer ids are not in the file: said once, as a warning
    assert any("4 of 5 answer ids have no entry" in w for w in result.warnings)
    without = next(c for c in import_dataset("2wiki", [TWOWIKI]).cases if c.case_id == MONTREAL)
    assert without.aliases == [] and answer_em(without, trace) == 0.0


def test_cli_import_with_aliases(tmp_path: Path) -> None:
    aliases = write_aliases(tmp_path / "id_aliases.json")
    out = tmp_path / "wiki"
    result = CliRunner().invoke(app, ["import", "2wiki", str(TWOWIKI), "--out", str(out), "--aliases", str(aliases)])
    assert result.exit_code == 0, result.output
    case = next(c for c in load_cases(out / "cases.jsonl") if c.case_id == MONTREAL)
    assert "Montrealer" in case.aliases


def test_alias_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"Q_id": "Q1", "aliases": "Montreal"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="'aliases' is not a list of strings"):
        import_dataset("2wiki", [TWOWIKI], aliases=bad)
    with pytest.raises(ConfigError, match="--aliases is read for 2wiki only"):
        import_dataset("hotpotqa", [TWOWIKI], aliases=bad)
