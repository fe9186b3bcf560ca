"""The documentation's code blocks run as written.

Every ```python block of README.md and of every page under docs/ (docs/dev/ included) is
executed through the public API, and every ```bash block through the installed ``acidstore``
command, each in a fresh temporary directory, so a user who copies a block gets what it shows.
Two markers, HTML comments on the lines just above a block (visible in the Markdown source,
invisible when rendered), change that:

- ``<!-- not-run: REASON -->``: the block is not run (the install and test command itself, the
  long demo, a service that runs until stopped); the test is skipped with the reason.
- ``<!-- continues-previous-block -->``: the block runs in the directory of the block before it,
  after it (a shell command over the warehouse the Python block above created); a Python
  block also sees the names the Python blocks before it defined, as in one interpreter.

A block that mentions ``pyspark`` runs with the suite's one SparkSession already started, so
``SparkSession.builder.getOrCreate()`` in the block returns it (no second JVM). A failing block
fails its test, named by file and line, with the traceback in the document's own line numbers.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from acidstore import Warehouse

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*(not-run|continues-previous-block)\s*(?::\s*(.*?))?\s*-->$")
_RUNNABLE = {"python", "bash"}
#: seconds one shell command may take (a compaction of a tiny table takes a few)
COMMAND_TIMEOUT = 120


def _shown(document: Path) -> str:
    """A document's name as the failure messages give it: relative to the repository."""
    return str(document.relative_to(ROOT)) if document.is_relative_to(ROOT) else str(document)


@dataclass
class Block:
    """One fenced code block: where it is, its language, its code and its markers."""

    document: Path
    line: int  # the line of the opening fence, 1-based
    language: str
    code: str
    not_run: str | None = None
    continues: bool = False

    @property
    def where(self) -> str:
        return f"{_shown(self.document)}:{self.line}"


@dataclass
class Chain:
    """Blocks that run one after another in one directory (a block and its continuations)."""

    blocks: list[Block] = field(default_factory=list)


def parse_blocks(document: Path) -> list[Block]:
    """The fenced blocks of ``document`` with the markers of the comment lines above each."""
    lines = document.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{document.name}:{i + 1}: code block is never closed")
        block = Block(document, i + 1, opening.group(1), "\n".join(lines[i + 1:end]))
        above = i - 1
        while above >= 0 and lines[above].strip().startswith("<!--"):
            marker = _MARKER.match(lines[above].strip())
            if marker and marker.group(1) == "not-run":
                if not marker.group(2):
                    raise ValueError(f"{block.where}: a not-run marker must give its reason")
                block.not_run = marker.group(2)
            elif marker:
                block.continues = True
            above -= 1
        blocks.append(block)
        i = end + 1
    return blocks


def chains(documents: list[Path]) -> list[Chain]:
    """The runnable blocks grouped into chains; a continuation joins the chain before it."""
    result: list[Chain] = []
    for document in documents:
        previous: Chain | None = None
        for block in parse_blocks(document):
            if block.language not in _RUNNABLE:
                previous = None
                continue
            if block.continues:
                if previous is None:
                    raise ValueError(f"{block.where}: continues-previous-block follows no "
                                     "runnable block")
                previous.blocks.append(block)
            else:
                previous = Chain([block])
                result.append(previous)
    return result


CHAINS = chains(DOCUMENTS)


def run_python(block: Block, namespace: dict[str, object]) -> None:
    """Execute the block in ``namespace`` (its chain's: a continuation sees the names the
    block before it defined); line numbers in a traceback are the document's."""
    source = "\n" * block.line + block.code  # the first code line is the fence line + 1
    failure = None
    try:
        exec(compile(source, str(block.document), "exec"), namespace)
    except Exception:
        failure = traceback.format_exc()
    if failure is not None:  # outside the handler: the report shows this traceback only
        pytest.fail(f"{block.where}: the python block failed:\n{failure}", pytrace=False)


def run_bash(block: Block, directory: Path) -> None:
    """Run each command line of the block through the installed ``acidstore`` entry point."""
    command = shutil.which("acidstore")
    assert command, "the acidstore command is not installed (pip install -e .)"
    env = dict(os.environ)
    # the installed script imports the package: make it import this tree
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    for offset, text in enumerate(block.code.splitlines(), start=1):
        argv = shlex.split(text, comments=True)
        if not argv:
            continue
        where = f"{_shown(block.document)}:{block.line + offset}"
        if argv[0] != "acidstore":
            pytest.fail(f"{where}: only acidstore commands run here; mark the block "
                        f"<!-- not-run: reason --> instead: {text}", pytrace=False)
        done = subprocess.run([command, *argv[1:]], cwd=directory, env=env, text=True,
                              capture_output=True, timeout=COMMAND_TIMEOUT, check=False)
        if done.returncode != 0:
            pytest.fail(f"{where}: `{text.strip()}` exited {done.returncode}\n"
                        f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}", pytrace=False)


@pytest.mark.parametrize("chain", CHAINS, ids=[c.blocks[0].where for c in CHAINS])
def test_documented_block_runs(chain: Chain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               request: pytest.FixtureRequest) -> None:
    first = chain.blocks[0]
    if first.not_run:
        pytest.skip(f"{first.where} is marked not-run: {first.not_run}")
    spark = None
    if any("pyspark" in b.code for b in chain.blocks):
        spark = request.getfixturevalue("spark")  # the suite's, before the block asks for one
    if any("ACIDSTORE_METASTORE" in b.code for b in chain.blocks):
        # the PostgreSQL example reads its server's URL from there: the suite's own server
        monkeypatch.setenv("ACIDSTORE_METASTORE",
                           request.getfixturevalue("postgres_server").new_store())
    if any("ACIDSTORE_BUCKET" in b.code for b in chain.blocks):
        # the S3 example: a bucket of its own on the suite's S3 server, which the block
        # reaches through the variables pyarrow reads (AWS_ENDPOINT_URL, credentials, region)
        server = request.getfixturevalue("s3_server")
        for name, value in server.environ().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ACIDSTORE_BUCKET", server.new_bucket())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["readme-block"])
    namespace: dict[str, object] = {"__name__": "__readme__"}
    try:
        for block in chain.blocks:
            if block.not_run:
                pytest.fail(f"{block.where}: a continuation cannot be not-run", pytrace=False)
            if block.language == "python":
                run_python(block, namespace)
            else:
                run_bash(block, tmp_path)
    finally:
        for value in namespace.values():  # the blocks' open warehouses hold SQLite handles
            if isinstance(value, Warehouse):
                value.close()
        if spark is not None:  # a block's session settings end with it
            spark.conf.unset("spark.acidstore.warehouse")


def test_documents_have_runnable_blocks_and_markers_are_honoured(tmp_path: Path) -> None:
    """The parser sees what a reader sees: markers attach to the block below them only, a
    reasonless not-run is refused, and the README keeps its runnable blocks."""
    doc = tmp_path / "x.md"
    doc.write_text("<!-- not-run: slow -->\n```bash\nacidstore demo\n```\n\n"
                   "```python\nx = 1\n```\n<!-- continues-previous-block -->\n"
                   "```bash\nacidstore tables\n```\n```text\nnot code\n```\n")
    skipped, pair = chains([doc])
    assert skipped.blocks[0].not_run == "slow" and skipped.blocks[0].line == 2
    assert [(b.language, b.line, b.continues) for b in pair.blocks] == [
        ("python", 6, False), ("bash", 10, True)]
    doc.write_text("<!-- not-run: -->\n```bash\nacidstore demo\n```\n")
    with pytest.raises(ValueError, match="reason"):
        parse_blocks(doc)
    readme = [c for c in CHAINS if c.blocks[0].document.name == "README.md"]
    assert sum(not c.blocks[0].not_run for c in readme) >= 4
