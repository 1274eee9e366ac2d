"""Fuzz the configuration and artifact loaders: thresholds and release-policy YAML, the index manifest.

Same property as the record loaders: any bytes end in a result or a HopragError naming the file.
A policy that loads is also applied (``decide``) to a real evaluation report, and an index whose
manifest or documents file was damaged is also searched, because that is what the commands do next.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzz_strategies import DATA, FUZZ, ROOT, damaged_bytes, dumps, ends_cleanly, keys_of, mutated
from hypothesis import given
from hypothesis import strategies as st

from hoprag.datasets.schema import load_cases
from hoprag.evaluation.chain_eval import evaluate_chains
from hoprag.evaluation.release import decide, load_policy
from hoprag.io.traces import read_traces
from hoprag.gates.thresholds import load_thresholds
from hoprag.index.store import build_index, load_index
from hoprag.ingest.loaders import load_documents
from hoprag.llm.pricing import load_price_table
from hoprag.service.tokens import load_tokens

pytestmark = pytest.mark.unit

THRESHOLDS = yaml.safe_load((ROOT / "thresholds.yaml").read_text(encoding="utf-8"))
POLICY = yaml.safe_load((ROOT / "examples" / "release-policy.yaml").read_text(encoding="utf-8"))
CASES = load_cases(ROOT / "data" / "enterprise" / "cases.jsonl")
REPORT = evaluate_chains(CASES, read_traces(DATA / "eval_traces.jsonl"), ks=(2, 5, 10))
TOKENS = {"tokens": [{"token": "abcdefghijkl", "name": "alice", "clearance": "confidential", "can_write": True},
                     {"token": "mnopqrstuvwx", "name": "bob"}]}
PRICES = {"default": {"input_per_million": 0.5, "output_per_million": 1.5},
          "models": {"m1": {"input_per_million": 1, "output_per_million": 4}}}

# YAML that PyYAML turns into what JSON cannot say: dates, non-string keys, anchors, tags, 5000 digits.
YAML_JUNK = [
    "version: 1\nretrieve:\n  P@5: {min: 2024-01-01}\n", "? [a, b]\n: 1\n", "1: {2: 3}\n",
    "a: &x [*x]\n", "retrieve: !!python/object:os.system {}\n", "retrieve:\n  P@5: {min: " + "9" * 5000 + "}\n",
    "min:\n  answer_f1: .nan\n", "k: 1e999\n", "[" * 800 + "]" * 800, "- - - -\n", "k: -1\n", "k: 0\n",
    "critical: {templates: 3}\n", "timeouts: {allowed_fallbacks: abstain}\n", "min: [1, 2]\n", "\t- x\n",
    "version: 1\ningest:\n  pii_hits: 1\n", "version: 1\nindex: []\n", "uncertain: [exclude]\n",
    "k: " + "9" * 5000 + "\n", "x: 2024-13-45\n", "critical: {case_ids: [1]}\n", "retrieve:\n  1: {min: 1}\n",
    "default: {input_per_million: .nan, output_per_million: 1}\n", "models: []\n", "k: null\n",
    "retrieve:\n  P@5: {min: 1" + "0" * 400 + "}\n", "retrieve:\n  P@5: {min: 1, 2: 3}\n",
    "retrieve:\n  P@5: {min: 1, optional: 'no'}\n", 'tokens: ["\\ud800abcdefgh"]\n',
    "tokens:\n  - {token: [1, 2, 3, 4, 5, 6, 7, 8, 9]}\n", "tokens:\n  abcdefghij: {clearance: [1]}\n",
]
_YAML_JUNK = st.sampled_from(YAML_JUNK)


def _yaml_text(value: Any) -> str:
    try:
        return yaml.safe_dump(value, allow_unicode=True, sort_keys=False)
    except (yaml.YAMLError, RecursionError, ValueError):
        return "[" * 800 + "]" * 800


def yaml_bytes(base: dict[str, Any]) -> st.SearchStrategy[bytes]:
    keys = keys_of([base]) + ["min", "max", "mode", "optional", "k", "critical", "version"]
    texts = mutated([base], keys).map(_yaml_text) | _YAML_JUNK | st.text(max_size=40)
    return texts.flatmap(damaged_bytes) | st.binary(max_size=120)


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


@FUZZ
@given(data=st.data())
def test_thresholds_yaml(work: Path, data: st.DataObject) -> None:
    path = work / "thresholds.yaml"
    path.write_bytes(data.draw(yaml_bytes(THRESHOLDS), label="file"))
    ends_cleanly(lambda: load_thresholds(path), path.name)


@FUZZ
@given(data=st.data())
def test_release_policy_yaml_then_decide(work: Path, data: st.DataObject) -> None:
    path = work / "policy.yaml"
    path.write_bytes(data.draw(yaml_bytes(POLICY), label="file"))
    ends_cleanly(lambda: decide(CASES, REPORT, load_policy(path)), path.name)


@FUZZ
@given(data=st.data())
def test_price_table(work: Path, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(["prices.json", "prices.yaml"]), label="name")
    path = work / name
    if name.endswith(".json"):
        raw = data.draw(mutated([PRICES], keys_of([PRICES])).map(dumps).flatmap(damaged_bytes), label="file")
    else:
        raw = data.draw(yaml_bytes(PRICES), label="file")
    path.write_bytes(raw)
    ends_cleanly(lambda: load_price_table(path), path.name)


@FUZZ
@given(data=st.data())
def test_service_token_file(work: Path, data: st.DataObject) -> None:
    path = work / "tokens.yaml"
    path.write_bytes(data.draw(yaml_bytes(TOKENS), label="file"))
    ends_cleanly(lambda: load_tokens(path), path.name)


@pytest.fixture(scope="module")
def index_dir(work: Path) -> Path:
    out = work / "index"
    build_index(load_documents(DATA / "ingest_docs.jsonl"), out)
    return out


def _load_and_search(directory: Path) -> None:
    load_index(directory).retriever().retrieve("pilot order form", k=3)


@FUZZ
@given(data=st.data())
def test_damaged_index_manifest(work: Path, index_dir: Path, data: st.DataObject) -> None:
    manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    copy = work / "index-manifest"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(index_dir, copy)
    raw = data.draw(mutated([manifest], keys_of([manifest])).map(dumps).flatmap(damaged_bytes)
                    | st.binary(max_size=80), label="manifest")
    (copy / "manifest.json").write_bytes(raw)
    ends_cleanly(lambda: _load_and_search(copy), "manifest", copy.name)


@FUZZ
@given(data=st.data())
def test_damaged_index_documents(work: Path, index_dir: Path, data: st.DataObject) -> None:
    raw = (index_dir / "corpus.sqlite").read_bytes()
    copy = work / "index-documents"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(index_dir, copy)
    how = data.draw(st.sampled_from(["truncate", "splice", "zero-page"]), label="damage")
    at = data.draw(st.integers(0, len(raw) - 1), label="offset")
    if how == "truncate":
        damaged = raw[:at]
    elif how == "splice":
        damaged = raw[:at] + data.draw(st.binary(min_size=1, max_size=64), label="bytes") + raw[at + 1 :]
    else:
        page = at // 4096 * 4096
        damaged = raw[:page] + bytes(4096) + raw[page + 4096 :]
    (copy / "corpus.sqlite").write_bytes(damaged)

    def load_search_and_read() -> None:
        index = load_index(copy)
        for hit in index.retriever().retrieve("pilot order form", k=3):
            index.documents.get(hit.doc_id)
            index.chunks.get(hit.chunk_id)

    ends_cleanly(load_search_and_read, "corpus.sqlite", copy.name)


@pytest.mark.parametrize("text", YAML_JUNK, ids=range(len(YAML_JUNK)))
def test_known_yaml_junk_in_every_yaml_loader(work: Path, text: str) -> None:
    loaders = (("thresholds.yaml", load_thresholds), ("policy.yaml", lambda p: decide(CASES, REPORT, load_policy(p))),
               ("prices.yaml", load_price_table), ("tokens.yaml", load_tokens))
    for name, load in loaders:
        path = work / name
        path.write_text(text, encoding="utf-8")
        ends_cleanly(lambda: load(path), name)
