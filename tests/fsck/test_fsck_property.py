"""Property (issue 13): after any sequence of writes, compactions and cleaning, a sound table
gives no finding, and one random corruption of it is always found, with its check code and
the path it damaged."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from fsck_support import CORRUPTIONS
from hypothesis import given, settings
from hypothesis import strategies as st

import acidstore
from acidstore import Table
from acidstore.engine.handle import handle_of
from compaction import Cleaner, compact

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
#: an example (a warehouse, up to 8 statements, 2 fsck runs) takes ~0.3 s: CI's 30 take ~10 s
EXAMPLES = max(6, settings().max_examples // 2)

operations = st.lists(st.one_of(
    st.tuples(st.just("insert"), st.integers(1, 6), st.sampled_from(["x", "y"])),
    st.tuples(st.just("delete"), st.integers(0, 40), st.just("")),
    st.tuples(st.just("update"), st.integers(0, 40), st.just("")),
    st.tuples(st.just("minor"), st.just(0), st.just("")),
    st.tuples(st.just("major"), st.just(0), st.just("")),
), max_size=6)


def run(table: Table, steps: list[tuple[str, int, str]]) -> None:
    next_id = 0
    for kind, number, dt in steps:
        if kind == "insert":
            ids = list(range(next_id, next_id + number))
            next_id += number
            table.insert(pa.table({"id": ids, "v": [f"v{i}" for i in ids], "dt": [dt] * number}))
        elif kind == "delete":
            table.delete(f"id % 7 = {number % 7}")
        elif kind == "update":
            table.update(f"id % 5 = {number % 5}", {"v": "v || '+'"})
        else:
            compact(table, "minor" if kind == "minor" else "major")
            Cleaner(handle_of(table).core, retention_seconds=0).run()
    # the last write: rows in every partition, in a directory a write made (not compacted)
    ids = list(range(1000, 1006))
    table.insert(pa.table({"id": ids, "v": ["z"] * 6, "dt": ["x", "x", "x", "y", "y", "y"]}))


@settings(max_examples=EXAMPLES)
@given(steps=operations, corruption=st.none() | st.sampled_from(sorted(CORRUPTIONS)))
def test_fsck_finds_any_one_corruption(steps: list[tuple[str, int, str]],
                                       corruption: str | None) -> None:
    with tempfile.TemporaryDirectory() as root, acidstore.connect(Path(root) / "wh") as wh:
        table = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
        run(table, steps)
        assert wh.fsck().num_rows == 0
        if corruption is None:
            return
        check, path = CORRUPTIONS[corruption](table)
        findings = wh.fsck().to_pylist()
        assert (check, path) in {(f["check"], f["path"]) for f in findings}, findings
