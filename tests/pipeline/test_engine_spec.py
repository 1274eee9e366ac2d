"""EngineSpec: one description of an engine, read from a file or the flags, building the same engines as before.

The config hashes below were computed with the code as it was before specs existed (``make_engine(name,
index, ...)`` over the HotpotQA slice): an equal configuration must keep its hash, or resuming a run
written before would be refused and traces would no longer be byte-identical.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

from hoprag.cli import app
from hoprag.cli_io import command_paths
from hoprag.errors import ConfigError, InputError
from hoprag.index.store import IndexConfig, build_index, load_index
from hoprag.llm.settings import LLMSettings
from hoprag.pipeline.engine import MultiHopConfig
from hoprag.pipeline.factory import make_engine
from hoprag.pipeline.spec import ENGINE_NAMES, FUSIONS, MODES, MULTIHOP_KNOBS, RERANKERS, EngineSpec
from tests.cli_run import run_hoprag

SRC = Path(__file__).parents[2] / "src" / "hoprag"
QUESTION = "Which band did Neil Peart drum for?"

# (spec, index) -> the hash make_engine gave before EngineSpec existed
PINNED = {
    "single/bm25": ({"engine": "single"}, "plain", "3dc2c1c942449be3"),
    "multihop/bm25": ({"engine": "multihop"}, "plain", "b6213097be2cef8b"),
    "single/hybrid": ({"engine": "single", "mode": "hybrid"}, "dense", "5ea0b7a81fc77829"),
    "multihop/hybrid": ({"engine": "multihop", "mode": "hybrid"}, "dense", "265ead03f658461c"),
    "single/dense": ({"engine": "single", "mode": "dense"}, "dense", "86a40c437fda3a17"),
    "multihop/dense": ({"engine": "multihop", "mode": "dense"}, "dense", "9c168c9802682c94"),
    "single/k5": ({"engine": "single", "k": 5}, "plain", "da1c3f654dccb273"),
    "multihop/k5": ({"engine": "multihop", "k": 5}, "plain", "48a02884d08e97d3"),
    "multihop/no-graph": ({"engine": "multihop", "graph": False}, "plain", "d70e1e09543b1a62"),
    "multihop/knobs": ({"engine": "multihop", "multihop": {"max_hops": 2, "fallback": "abstain", "time_budget_ms": 500.0}},
                       "plain", "7d3446448d7e5517"),
}
PINNED_PUBLIC = {"single": "dc12cf53e3a95366", "multihop": "c228627fd057feda"}

# a valid value other than the default for every knob of the multi-hop engine (k is the spec's own)
KNOB_VALUES = {
    "max_hops": 3, "bridge_hops": 2, "keep_first_hop": 4, "bridges_per_evidence": 3, "max_branches": 6,
    "keep_per_branch": 3, "context_k": 8, "loop_overlap": 0.5, "near_duplicate": 0.75, "min_evidence": 3,
    "parallelism": 2, "cache_size": 16, "time_budget_ms": 900.0, "token_budget": 500, "fallback": "abstain",
    "restricted_partial": "partial", "bridge_weight": 3, "sufficient_coverage": 0.5,
}


@pytest.fixture(scope="module")
def indexes(hotpot_slice, tmp_path_factory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("spec-indexes")
    build_index(hotpot_slice.documents, root / "plain")
    build_index(hotpot_slice.documents, root / "dense", IndexConfig(dense=True, embedder="static"))
    return {"plain": load_index(root / "plain"), "dense": load_index(root / "dense"), "root": root}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- the hash of an equal configuration stays

@pytest.mark.parametrize("name", sorted(PINNED))
def test_config_hashes_are_those_of_before(indexes, name) -> None:
    fields, which, expected = PINNED[name]
    spec = EngineSpec.parse(fields)
    assert make_engine(spec, indexes[which]).config_hash == expected
    flat = {k: v for k, v in fields.items() if k not in ("engine", "multihop")} | fields.get("multihop", {})
    assert make_engine(fields["engine"], indexes[which], **flat).config_hash == expected


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_a_clearance_is_the_callers_and_keeps_its_hash(indexes, engine) -> None:
    built = make_engine(EngineSpec(engine=engine), indexes["plain"], clearance="public")
    assert built.config_hash == PINNED_PUBLIC[engine]
    assert "clearance" not in EngineSpec.model_fields


def test_a_default_spec_from_a_file_builds_the_default_engine(indexes, tmp_path) -> None:
    path = write(tmp_path / "engine.yaml", EngineSpec().to_yaml())
    assert make_engine(EngineSpec.from_file(path), indexes["plain"]).config_hash == PINNED["multihop/bm25"][2]
    assert make_engine(EngineSpec.from_file(write(tmp_path / "comments.yaml", "# every setting at its default\n")), indexes["plain"]).config_hash \
        == PINNED["multihop/bm25"][2]


# ---------------------------------------------------------------- reading and writing

def _rich_spec() -> EngineSpec:
    return EngineSpec(engine="multihop", mode="hybrid", fusion="weighted", k=7, graph=False, rerank="llm",
                      llm="openai:gpt-x", planner_llm="openai:small", synth_llm="llamacpp:m.gguf", judge_llm="openai:j",
                      llm_settings=LLMSettings(base_url="http://127.0.0.1:9/v1", timeout=5.0, retries=1, n_ctx=4096,
                                               budget=12.5, strict=True, breaker_reset=30.0),
                      multihop=MultiHopConfig(**KNOB_VALUES))


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_round_trip_through_a_file(tmp_path, suffix) -> None:
    spec = _rich_spec()
    text = spec.to_json() if suffix == ".json" else spec.to_yaml()
    assert EngineSpec.from_file(write(tmp_path / f"engine{suffix}", text)) == spec


def test_the_api_key_is_never_written_and_a_file_holding_one_is_refused(tmp_path) -> None:
    spec = EngineSpec(llm="openai:m", llm_settings=LLMSettings(api_key="sk-secret-123"))
    assert "sk-secret" not in spec.to_yaml() + spec.to_json()
    path = write(tmp_path / "engine.yaml", "llm: openai:m\nllm_settings:\n  api_key: sk-secret-123\n")
    with pytest.raises(InputError) as caught:
        EngineSpec.from_file(path)
    assert "sk-secret" not in str(caught.value) and "Fix: pass --api-key or set HOPRAG_API_KEY" in str(caught.value)


def test_an_unknown_key_is_refused_in_the_house_words(tmp_path) -> None:
    path = write(tmp_path / "engine.yaml", "engine: multihop\nmultihop:\n  max_hop: 3\n")
    with pytest.raises(InputError) as caught:
        EngineSpec.from_file(path)
    assert str(caught.value) == (f"{path}: invalid engine config: is an unknown field (field 'multihop.max_hop'). "
                                 "Fix: remove 'multihop.max_hop' or correct its spelling")


@pytest.mark.parametrize("text, needle", [
    ("engine: multihop\nmultihop: {k: 3}\n", "holds k, which is set at the top level"),
    ("engine: single\nmultihop: {max_hops: 2}\n", "sets max_hops, which the single engine would ignore"),
    ("mode: sparse\n", "is not one of the allowed values (got 'sparse') (field 'mode')"),
    ("k: 0\n", "must be at least 1"),
    ("- engine\n", "an engine config is a mapping"),
])
def test_what_a_spec_refuses(tmp_path, text, needle) -> None:
    with pytest.raises(InputError) as caught:
        EngineSpec.from_file(write(tmp_path / "engine.yaml", text))
    assert needle in str(caught.value) and "Fix:" in str(caught.value)


def test_the_one_list_of_names_matches_the_spec_fields() -> None:
    def choices(field: str) -> tuple[str, ...]:
        return typing.get_args(EngineSpec.model_fields[field].annotation)

    assert choices("engine") == ENGINE_NAMES and choices("mode") == MODES
    assert choices("fusion") == FUSIONS and choices("rerank") == RERANKERS


# ---------------------------------------------------------------- every knob reaches the engine

def test_every_knob_has_a_value_here() -> None:
    assert set(KNOB_VALUES) == set(MULTIHOP_KNOBS) == set(MultiHopConfig.model_fields) - {"k"}
    assert all(KNOB_VALUES[n] != MultiHopConfig.model_fields[n].default for n in KNOB_VALUES)


@pytest.mark.parametrize("knob", sorted(KNOB_VALUES))
def test_every_knob_set_in_a_file_reaches_the_engine(indexes, tmp_path, knob) -> None:
    path = write(tmp_path / "engine.json", json.dumps({"k": 6, "multihop": {knob: KNOB_VALUES[knob]}}))
    engine = make_engine(EngineSpec.from_file(path), indexes["plain"])
    assert getattr(engine.config, knob) == KNOB_VALUES[knob] and engine.config.k == 6
    assert engine.config_hash != PINNED["multihop/bm25"][2]


# ---------------------------------------------------------------- the command line


def run_cli(argv: list[str], capsys, timeout: int = 120) -> tuple[int, str, str]:
    return run_hoprag(argv, capsys, timeout=timeout)


def test_ask_answers_with_the_engine_config(indexes, tmp_path, capsys) -> None:
    path = write(tmp_path / "engine.yaml", "k: 5\nmultihop:\n  max_hops: 2\n  fallback: abstain\n")
    code, out, err = run_cli(["ask", str(indexes["root"] / "plain"), QUESTION, "--engine-config", str(path), "--json"],
                             capsys)
    assert code == 0, err
    trace = json.loads(out)
    assert trace["config_hash"] == make_engine(EngineSpec.from_file(path), indexes["plain"]).config_hash
    assert max(step["hop"] for step in trace["steps"]) <= 2
    assert max(len(step["hits"]) for step in trace["steps"]) == 5


def test_flags_typed_on_the_command_line_override_the_file(indexes, tmp_path, capsys) -> None:
    path = write(tmp_path / "engine.yaml", "engine: multihop\nk: 5\nmultihop: {max_hops: 2}\n")
    code, out, err = run_cli(["ask", str(indexes["root"] / "plain"), QUESTION, "--engine-config", str(path),
                              "--k", "3", "--json"], capsys)
    assert code == 0, err
    expected = EngineSpec.parse({"k": 3, "multihop": {"max_hops": 2}})
    assert json.loads(out)["config_hash"] == make_engine(expected, indexes["plain"]).config_hash
    # a flag's default does not override the file: without --k the file's 5 holds
    code, out, _ = run_cli(["ask", str(indexes["root"] / "plain"), QUESTION, "--engine-config", str(path), "--json"],
                           capsys)
    assert json.loads(out)["config_hash"] == make_engine(expected.replace(k=5), indexes["plain"]).config_hash
    # --engine single over a file with multi-hop knobs: refused, not silently ignored
    code, _, err = run_cli(["ask", str(indexes["root"] / "plain"), QUESTION, "--engine-config", str(path),
                            "--engine", "single"], capsys)
    assert code != 0 and "single engine would ignore" in err and "Fix:" in err


def test_run_writes_traces_of_the_engine_config(indexes, hotpot_slice, tmp_path, capsys) -> None:
    from hoprag.datasets.importers import write_import

    write_import(hotpot_slice, tmp_path / "hp")
    path = write(tmp_path / "engine.json", json.dumps({"engine": "single", "k": 4}))
    out_file = tmp_path / "traces.jsonl"
    code, _, err = run_cli(["run", str(indexes["root"] / "plain"), str(tmp_path / "hp" / "cases.jsonl"),
                            "--out", str(out_file), "--engine-config", str(path), "--quiet"], capsys)
    assert code == 0, err
    lines = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    header, traces = lines[0], lines[1:]
    assert header["engine"] == "single"
    assert header["config_hash"] == make_engine("single", indexes["plain"], k=4).config_hash
    assert len(traces) == 5 and all(len(t["steps"][0]["hits"]) == 4 for t in traces)


# ---------------------------------------------------------------- no entry point bypasses the spec

ANSWERING = ("ask", "run", "ablate", "serve")


@pytest.mark.parametrize("path", ANSWERING)
def test_every_answering_command_takes_an_engine_config(path) -> None:
    import inspect

    callback = dict(command_paths(app))[path].callback
    assert "engine_config" in inspect.signature(callback).parameters


# flags of the same name that mean something else there, or that a command sets its own default for
NOT_ENGINE_FLAGS = {
    ("search", "k"), ("search", "mode"), ("search", "fusion"),  # search ranks hits; it builds no engine
    ("ablate", "k"),  # the cut-off of ablate's scores
    ("compare", "k"),  # a cut-off of compared scores
    ("index", "graph"),  # whether the index is built with its entity graph
    ("judge calibrate", "llm"), ("judge calibrate", "llm_budget"),  # the judge's model, not an engine's
    ("ablate", "planner_llm"),  # the group's flag with ablate's own help
    ("serve", "llm_timeout"),  # the group's flag with the service's 20 s default
}


def test_engine_flags_come_from_the_option_group() -> None:
    """A command declaring its own --engine, --llm, --mode or --graph bypasses hoprag.cli_engine."""
    import inspect

    from hoprag.cli_engine import ENGINE_FLAGS

    offenders = sorted(
        (path, name)
        for path, info in command_paths(app)
        for name, param in inspect.signature(info.callback).parameters.items()
        if name in ENGINE_FLAGS and param.default is not ENGINE_FLAGS[name][1] and (path, name) not in NOT_ENGINE_FLAGS
    )
    assert not offenders, f"take these flags from hoprag.cli_engine.engine_options: {offenders}"


def test_make_engine_refuses_a_spec_and_keywords_together(indexes) -> None:
    with pytest.raises(TypeError):
        make_engine(EngineSpec(), indexes["plain"], k=3)
    with pytest.raises(ConfigError, match="valid: single, multihop"):
        make_engine("magic", indexes["plain"])
