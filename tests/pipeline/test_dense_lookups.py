"""``dense_lookups``: a dense or hybrid mode for the bridge lookups only, the question's first lookups staying BM25.

The question below is planned as a first lookup and a dependent one (the band Neil Peart drummed
for, then that band's page), so one trace shows both kinds of lookup and which retriever served each.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.cli import main
from hoprag.errors import InputError
from hoprag.index.store import IndexConfig, build_index, load_index
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.spec import DENSE_LOOKUPS, EngineSpec

pytestmark = pytest.mark.unit

QUESTION = "Which band did Neil Peart drum for?"
# the hash of multihop/hybrid pinned in test_engine_spec.py (from before specs existed)
HYBRID_HASH = "265ead03f658461c"


@pytest.fixture(scope="module")
def dense_dir(hotpot_slice, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dense-lookups") / "index"
    build_index(hotpot_slice.documents, out, IndexConfig(dense=True, embedder="static"))
    return out


def _served_by(trace) -> tuple[set[str], set[str]]:
    """Retrievers of the hits of first lookups and of dependent lookups (graph proposals left out)."""
    first = {h.retriever for s in trace.steps if not s.depends_on for h in s.hits}
    dependent = {h.retriever for s in trace.steps if s.depends_on for h in s.hits if h.retriever != "graph"}
    return first, dependent


def test_bridges_only_serves_first_lookups_by_bm25_and_dependent_ones_by_hybrid(dense_dir) -> None:
    index = load_index(dense_dir)
    trace = make_engine(EngineSpec.parse({"mode": "hybrid", "dense_lookups": "bridges"}), index).answer(QUESTION)
    first, dependent = _served_by(trace)
    assert first == {"bm25"}
    assert dependent and dependent <= {"hybrid"}
    # every lookup hybrid: the first ones too
    first_all, _ = _served_by(make_engine(EngineSpec.parse({"mode": "hybrid"}), index).answer(QUESTION))
    assert first_all == {"hybrid"}


def test_all_keeps_the_hash_of_before_and_bridges_has_its_own(dense_dir) -> None:
    index = load_index(dense_dir)
    assert EngineSpec().dense_lookups == "all" and DENSE_LOOKUPS == ("all", "bridges")
    assert make_engine(EngineSpec.parse({"mode": "hybrid", "dense_lookups": "all"}), index).config_hash == HYBRID_HASH
    bridges = make_engine(EngineSpec.parse({"mode": "hybrid", "dense_lookups": "bridges"}), index).config_hash
    assert bridges not in (HYBRID_HASH, make_engine(EngineSpec.parse({}), index).config_hash)


@pytest.mark.parametrize(("spec", "said"), [
    ({"dense_lookups": "bridges"}, "needs mode dense or hybrid"),
    ({"engine": "single", "mode": "hybrid", "dense_lookups": "bridges"}, "single engine would ignore"),
    ({"mode": "hybrid", "dense_lookups": "first"}, "dense_lookups"),
])
def test_a_setting_that_would_do_nothing_is_refused(spec, said) -> None:
    with pytest.raises(InputError) as caught:
        EngineSpec.parse(spec)
    assert said in str(caught.value) and caught.value.fix


def test_the_flag_and_the_file_set_it(dense_dir, tmp_path, capsys) -> None:
    config = tmp_path / "engine.yaml"
    config.write_text("mode: hybrid\ndense_lookups: bridges\n", encoding="utf-8")
    expected = make_engine(EngineSpec.from_file(config), load_index(dense_dir)).config_hash
    for extra in (["--engine-config", str(config)], ["--mode", "hybrid", "--dense-lookups", "bridges"]):
        assert _exit_code(["ask", str(dense_dir), QUESTION, "--format", "json", *extra]) == 0
        assert json.loads(capsys.readouterr().out)["config_hash"] == expected
    assert _exit_code(["ask", str(dense_dir), QUESTION, "--dense-lookups", "bridges"]) != 0
    err = capsys.readouterr().err
    assert "needs mode dense or hybrid" in err and "Fix:" in err


def _exit_code(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return 0
