"""Benchmark importers: HotpotQA, MuSiQue, 2WikiMultihopQA and BEIR into evidence-chain cases.

``import_dataset`` reads one format's files (plus optional pooled passage corpora) into cases and a
deduplicated document corpus; ``write_import`` stores them as ``cases.jsonl`` and ``corpus.jsonl``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from hoprag.datasets.importers import beir, hotpotqa, musique, twowiki
from hoprag.datasets.importers.common import STAT_KEYS, ImportResult, ImportState
from hoprag.datasets.passages import load_passage_corpus
from hoprag.datasets.schema import write_cases
from hoprag.errors import ConfigError, InputError, UnknownFormatError
from hoprag.io.kinds import CORPUS_JSONL
from hoprag.io.outputs import write_records

_PER_FILE: dict[str, Callable[[Path, ImportState], None]] = {
    "hotpotqa": hotpotqa.import_file,
    "musique": musique.import_file,
    "2wiki": twowiki.import_file,
}
FORMATS = (*_PER_FILE, "beir")

__all__ = ["FORMATS", "STAT_KEYS", "ImportResult", "import_dataset", "write_import"]


def import_dataset(
    fmt: str, files: Sequence[Path], extra_corpora: Sequence[Path] = (), *, aliases: Path | None = None
) -> ImportResult:
    """Import benchmark files of one format; ``extra_corpora`` are passage corpora appended (deduplicated).

    ``aliases`` (2wiki only) is the dataset's ``id_aliases.json``: each record's ``answer_id`` aliases
    and demonyms become the case's aliases, as the official evaluator reads them.
    Raises ``UnknownFormatError`` for a format not in :data:`FORMATS` and ``InputError`` for
    unreadable or malformed input (naming the file, record and field).
    """
    if fmt not in FORMATS:
        raise UnknownFormatError(
            f"unknown dataset format {fmt!r}", field="format", fix=f"use one of: {', '.join(FORMATS)}"
        )
    paths = [Path(f) for f in files]
    if not paths:
        raise InputError(f"no {fmt} files given", fix="pass at least one dataset file")
    if aliases is not None and fmt != "2wiki":
        raise ConfigError(f"--aliases is read for 2wiki only, not {fmt}; drop --aliases")
    state = ImportState(fmt)
    if fmt == "beir":
        beir.import_files(paths, state)
    else:
        importer = _PER_FILE[fmt]
        alias_map = twowiki.read_alias_file(Path(aliases)) if aliases is not None else None
        if alias_map is not None:
            importer = partial(twowiki.import_file, aliases=alias_map)
        for path in paths:
            importer(path, state)
        if alias_map is not None:
            _warn_unmatched_aliases(state, alias_map, Path(aliases))  # type: ignore[arg-type]
    for corpus in extra_corpora:
        before = len(state.builder)
        for doc in load_passage_corpus(corpus, source=fmt):
            state.builder.add(doc)
        state.extra_documents += len(state.builder) - before
    return state.result()


def _warn_unmatched_aliases(state: ImportState, alias_map: dict[str, list[str]], path: Path) -> None:
    ids = [c.metadata.get("answer_id") for c in state.cases]
    with_id = [i for i in ids if i is not None]
    matched = sum(1 for i in with_id if i in alias_map)
    if not with_id:
        state.warn(f"no record carries an 'answer_id'; the alias file {path} was not used")
    elif matched < len(with_id):
        state.warn(f"{len(with_id) - matched} of {len(with_id)} answer ids have no entry in the alias file {path}")


def write_import(result: ImportResult, out_dir: Path) -> None:
    """Write ``out_dir/cases.jsonl`` (native case format) and ``out_dir/corpus.jsonl`` (documents)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_cases(out_dir / "cases.jsonl", result.cases)
    write_records(out_dir / "corpus.jsonl", result.documents, kind=CORPUS_JSONL)
