"""Every relative link of the documentation points to something that exists.

README.md and every page under docs/ link to each other, to headings of each other and to
files of the repository; a page moved or a heading renamed must not leave a link behind. A
link's target (relative to the page) must exist, and its ``#fragment``, if any, must be the
anchor of a heading of the Markdown file it names (GitHub's anchors: lower case, punctuation
dropped, spaces as hyphens, ``-1``, ``-2`` for repeats). Links inside code are not links.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^\s*```")
_CODE_SPAN = re.compile(r"`[^`]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def prose_lines(document: Path) -> list[tuple[int, str]]:
    """The document's lines outside fenced code blocks, with their 1-based numbers."""
    lines: list[tuple[int, str]] = []
    in_code = False
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), start=1):
        if _FENCE.match(line):
            in_code = not in_code
        elif not in_code:
            lines.append((number, line))
    return lines


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(document: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(document):
        heading = _HEADING.match(line)
        if heading is None:
            continue
        base = anchor(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(document: Path) -> list[tuple[int, str]]:
    return [(number, target)
            for number, line in prose_lines(document)
            for target in _LINK.findall(_CODE_SPAN.sub("", line))
            if not _EXTERNAL.match(target)]


def broken_links(document: Path, root: Path = ROOT) -> list[str]:
    """``file:line: target (why)`` for each relative link of ``document`` that leads nowhere
    (``file`` relative to ``root``)."""
    broken = []
    for number, target in links(document):
        path, _, fragment = target.partition("#")
        resolved = (document.parent / path).resolve() if path else document
        where = f"{document.relative_to(root)}:{number}: {target}"
        if not resolved.exists():
            broken.append(f"{where} (no such file)")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{where} (no such heading in {resolved.name})")
    return broken


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(ROOT)) for d in DOCUMENTS])
def test_relative_links_lead_somewhere(document: Path) -> None:
    assert broken_links(document) == []


def test_the_checker_sees_what_a_reader_sees(tmp_path: Path) -> None:
    """Anchors as GitHub makes them; links in code are not links; a missing file or heading
    is reported, an existing one is not."""
    assert anchor("Writing with `df.write`") == "writing-with-dfwrite"
    assert anchor("Leases: why the cleaner waits") == "leases-why-the-cleaner-waits"
    assert anchor("Object storage (S3)") == "object-storage-s3"
    (tmp_path / "other.md").write_text("# Title\n\n## Part one\n\n## Part one\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n[a](other.md#part-one) [b](other.md#part-one-1) [c](#page)\n"
                    "[d](other.md#nothing) [e](gone.md) [f](https://example.com/x)\n"
                    "`[g](gone-too.md)`\n```\n[h](gone-three.md)\n```\n")
    reported = [entry.split(": ", 1)[1] for entry in broken_links(page, tmp_path)]
    assert reported == ["other.md#nothing (no such heading in other.md)",
                        "gone.md (no such file)"]

