"""The manual builds and the README stays a front page: ``mkdocs build --strict`` passes (no broken
link or anchor between pages), the README holds at most 400 lines, and every relative link in it
reaches a file (and, into docs/, a heading that exists)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAX_README_LINES = 400

# Links written as markdown, inline ([text](target "title")) or as references ([name]: target).
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def _links(markdown: str) -> list[str]:
    """Every link target outside code blocks and code spans (where paths are text, not links)."""
    prose = CODE_SPAN.sub("", FENCE.sub("", markdown))
    return INLINE_LINK.findall(prose) + REFERENCE_LINK.findall(prose)


def _is_relative(target: str) -> bool:
    return not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) and not target.startswith(("#", "/"))


def _anchors(page: Path) -> set[str]:
    """The heading ids mkdocs gives a page (Python-Markdown's toc slugs)."""
    from markdown.extensions.toc import slugify

    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slugify(m.group(1).strip(), "-") for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.MULTILINE)}


def _need_mkdocs() -> None:
    if importlib.util.find_spec("mkdocs") is None:
        reason = "mkdocs is not installed (it comes with the dev extra: pip install -e '.[dev]')"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def test_link_finder_reads_inline_reference_and_image_links_but_not_code() -> None:
    text = ('See [a](docs/a.md#x) and ![fig](docs/figures/f.svg "title").\n'
            "[ref]: docs/b.md\n"
            "`[not](a-link.md)`\n"
            "```\n[nor](this.md)\n```\n"
            "[web](https://example.org) [here](#top)\n")
    assert _links(text) == ["docs/a.md#x", "docs/figures/f.svg", "https://example.org", "#top", "docs/b.md"]
    assert [t for t in _links(text) if _is_relative(t)] == ["docs/a.md#x", "docs/figures/f.svg", "docs/b.md"]


def test_readme_is_at_most_400_lines() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, (
        f"README.md has {lines} lines (at most {MAX_README_LINES}); move the detail to its page in docs/ "
        "and link to it")


def test_every_relative_link_in_the_readme_resolves() -> None:
    broken = []
    for target in _links(README.read_text(encoding="utf-8")):
        if not _is_relative(target):
            continue
        path_part, _, anchor = target.partition("#")
        path = (ROOT / path_part).resolve()
        if not path.is_file():
            broken.append(f"{target}: no file {path_part}")
        elif anchor and path.suffix == ".md" and ROOT / "docs" in path.parents:
            _need_mkdocs()
            if anchor not in _anchors(path):
                broken.append(f"{target}: no heading with the id #{anchor} in {path_part}")
    assert not broken, "README.md links that lead nowhere:\n" + "\n".join(broken)


def test_the_manual_builds_with_strict(tmp_path: Path) -> None:
    _need_mkdocs()
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, "mkdocs build --strict failed:\n" + result.stderr[-4000:]
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")}
    built = {p.parent.name if p.parent != site else "index" for p in site.rglob("index.html")}
    assert pages <= built, f"pages missing from the built site: {sorted(pages - built)}"


def test_every_module_the_concept_table_names_exists() -> None:
    """docs/contributing.md maps each concept to its file; a file moved or renamed must move there too."""
    text = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    named = [name for row in re.findall(r"^\|[^|\n]+\|([^\n]+)\|\s*$", text, re.MULTILINE)
             for name in re.findall(r"`([\w./]+(?:\.py|/))`", row)]
    assert len(named) > 100, "the concept table of docs/contributing.md was not found"
    missing = sorted({name for name in named if not (ROOT / "src" / "hoprag" / name).exists()})
    assert not missing, ("docs/contributing.md names files that are not under src/hoprag/: "
                         + ", ".join(missing) + "; point each concept at the module that holds it now")
