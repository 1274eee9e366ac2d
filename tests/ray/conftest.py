"""A real local Ray for each test module here (``ray.init(num_cpus=2)``, started once per module and
shut down after it, so a test elsewhere never finds it running), and the bundled samples indexed."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoprag.datasets.importers import import_dataset
from hoprag.datasets.schema import load_cases
from hoprag.index.store import build_index
from hoprag.ingest.loaders import load_corpora

ROOT = Path(__file__).resolve().parents[2]
ENTERPRISE = ROOT / "data" / "enterprise"
HOTPOT_DEV = ROOT / "data" / "hotpotqa" / "hotpot_dev_distractor_hoprag.json"


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def enterprise(tmp_path_factory):
    """The enterprise sample's index directory and its cases."""
    out = tmp_path_factory.mktemp("ray-enterprise") / "index"
    build_index(load_corpora([ENTERPRISE / "corpus.jsonl"]), out)
    return out, load_cases(ENTERPRISE / "cases.jsonl")


@pytest.fixture(scope="module")
def hotpot(tmp_path_factory):
    """The bundled HotpotQA dev sample, imported and indexed: its index directory and its cases."""
    imported = import_dataset("hotpotqa", [HOTPOT_DEV])
    out = tmp_path_factory.mktemp("ray-hotpot") / "index"
    build_index(imported.documents, out)
    return out, imported.cases
