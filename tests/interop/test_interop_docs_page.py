"""docs/evaluate-your-pipeline.md runs as written: its pipeline scripts and its shell commands, in a
fresh directory over the bundled HotpotQA slice, exit 0, and hoprag's scores equal a computation from
what the pipelines' retrievers themselves returned (recorded by run_recorded.py), so the page cannot rot."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pipelines import SLICE, chain_coverage_at

from hoprag.cli import main
from hoprag.datasets.schema import load_cases
from hoprag.io.traces import read_traces

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PAGE = Path(__file__).parents[2] / "docs" / "evaluate-your-pipeline.md"
RUNNER = Path(__file__).parent / "run_recorded.py"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
FRAMEWORKS = ["llamaindex", "haystack", "langchain"]


def _blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(PAGE.read_text(encoding="utf-8")) if lang == language]


def _scripts() -> dict[str, str]:
    """The page's Python scripts by the file name their first line gives (``# NAME.py: ...``)."""
    named = {}
    for body in _blocks("python"):
        first = re.match(r"# (\w+\.py)\b", body)
        if first:
            named[first.group(1)] = body
    return named


def _commands() -> list[list[str]]:
    """The page's shell commands that run something here (``pip install`` lines are the reader's)."""
    commands = []
    for body in _blocks("bash"):
        for line in body.splitlines():
            argv = shlex.split(line, comments=True)
            if argv and argv[0] in ("hoprag", "python"):
                commands.append(argv)
    return commands


@contextlib.contextmanager
def _inside(directory: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


@pytest.fixture(scope="module")
def page_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The page's scripts and commands run in order in a fresh directory: (directory, output per command)."""
    for module in ("llama_index.core", "openinference.instrumentation.llama_index", "haystack",
                   "openinference.instrumentation.haystack", "langchain_community.retrievers", "rank_bm25",
                   "openinference.instrumentation.langchain", "opentelemetry.exporter.otlp.proto.common"):
        pytest.importorskip(module)
    work = tmp_path_factory.mktemp("page")
    (work / "data" / "hotpotqa").mkdir(parents=True)
    shutil.copy(SLICE, work / "data" / "hotpotqa" / SLICE.name)  # where the page's import reads the sample
    for name, code in _scripts().items():
        (work / name).write_text(code, encoding="utf-8")
    printed: dict[str, str] = {}
    for argv in _commands():
        if argv[0] == "python":  # the script as `python SCRIPT` runs it, its retrievers' results recorded
            done = subprocess.run([sys.executable, str(RUNNER), argv[1], "hotpot/corpus.jsonl"], cwd=work,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{argv[1]}\n{done.stdout}\n{done.stderr}"
            continue
        argv = [p for arg in argv[1:] for p in (sorted(str(m.relative_to(work)) for m in work.glob(arg))
                                                if "*" in arg else [arg])]  # the shell's glob
        with _inside(work), contextlib.redirect_stdout(io.StringIO()) as out:
            main(argv)  # the CLI in this process (a refusal is SystemExit 2): no interpreter start per command
        command = " ".join(argv[:2])
        printed[command] = printed.get(command, "") + out.getvalue()
    return work, printed


def test_the_page_names_a_script_and_its_commands_for_each_framework() -> None:
    assert set(_scripts()) == {"otlp_json_file.py", *(f"{name}_pipeline.py" for name in FRAMEWORKS)}
    runs = [argv for argv in _commands() if argv[0] == "python"]
    assert [argv[1] for argv in runs] == [f"{name}_pipeline.py" for name in FRAMEWORKS]


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_the_page_scores_what_the_pipeline_retrieved(name, page_run) -> None:
    work, printed = page_run
    cases = load_cases(work / "hotpot" / "cases.jsonl")
    calls = json.loads((work / f"{name}_pipeline.py.calls.json").read_text(encoding="utf-8"))
    assert len(calls) == 2 * len(cases)  # the page's pipelines make two retrieval calls per question
    results = {case.case_id: calls[2 * i:2 * i + 2] for i, case in enumerate(cases)}
    assert all(doc for call in calls for doc in call)  # every recorded document carries its corpus id
    recorded = sum(len(call) for call in calls)
    # the frameworks' own ids (node UUIDs, content hashes): every document resolves by its metadata
    assert f"{recorded} recorded documents: 0 by id, {recorded} by metadata, 0 by content, 0 unresolved" \
        in " ".join(printed["traces import"].split())
    traces = {t.case_id: t for t in read_traces(work / f"{name}_traces.jsonl")}
    assert set(traces) == {case.case_id for case in cases}
    for case in cases:
        trace = traces[case.case_id]
        assert [[h.doc_id for h in step.hits] for step in trace.steps] == results[case.case_id]  # 2 hops, not 4
        assert trace.question == case.query
        assert trace.answer.text.startswith("Context:")  # the stand-in model's reply as text, not its JSON
    aggregate = json.loads((work / f"{name}_eval.json").read_text(encoding="utf-8"))["aggregate"]
    expected = chain_coverage_at(cases, results, 5)
    assert expected > 0
    assert aggregate["chain_coverage@5"] == pytest.approx(expected)


def test_the_pages_refusal_is_what_eval_prints_when_the_ids_match_nothing(page_run, capsys) -> None:
    work, _ = page_run
    block = next(body for body in _blocks("text") if "--out haystack_raw.jsonl" in body)
    commands = [shlex.split(line[2:])[1:] for line in block.splitlines() if line.startswith("$ hoprag ")]
    shown = next(line for line in block.splitlines() if line.startswith("error: "))
    with _inside(work):
        main(commands[0])  # the import without --corpus: the frameworks' own ids are kept
        capsys.readouterr()
        with pytest.raises(SystemExit) as stopped:
            main(commands[1])
    assert stopped.value.code == 2
    # the page's message, but for how many documents the slice retrieved and which three it names
    counted = re.compile(r"none of the \d+ documents the traces retrieved \(e\.g\. [^)]*\)")
    assert counted.sub("N", " ".join(capsys.readouterr().err.split())) == counted.sub("N", shown)
