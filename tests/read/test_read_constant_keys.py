"""Stripes whose statistics prove one (originalTransaction, bucket) decode their rowIds only
(``acidstore.read.keys.stripe_key_constants``): the vectorized reader must still return
exactly what the heap merge returns, ROW__IDs included, on a file where some stripes hold one
write id and statement and others straddle two, with deletes in some stripes and not others,
an aborted write id, and an original file beside the deltas."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from acidfiles import (
    bucket_property,
    delete_events,
    events_table,
    row,
    write_dir_stripes,
    write_events,
    write_original,
)

import acidstore
from acidstore.errors import DataError
from acidstore.format.layout import ACID_VERSION, ACID_VERSION_FILE
from acidstore.format.orc.file_reader import OrcFile
from acidstore.read.keys import stripe_key_constants
from acidstore.read.split_source import PROBE_MIN_ROWS

#: ORC cuts this file's stripes every 9,000 events (two batches of this many; its writer
#: checks the stripe size only that often): stripe 0 holds write id 2, stripe 1 write ids 3
#: and 4, stripe 2 two statements of write id 4, stripe 3 write id 5
ROWS_PER_STRIPE = 4500
#: (write id, statement, events) in key order
STATEMENTS = ((2, 0, 9000), (3, 0, 4500), (4, 0, 9000), (4, 1, 4500), (5, 0, 9000))
DELTA = "delta_0000002_0000005"
DELETED = 5


def _layout(root: Path) -> None:
    """Write ids 2-5 in one bucket file (as a minor compaction leaves them). Delete events
    hit stripes 0, 1 and 2 and the original file; stripe 3 has none."""
    events: list[tuple[int, int, int, int, int, Any]] = []
    for w, statement, count in STATEMENTS:
        first = 100_000 * w + 10_000 * statement
        events += [(0, w, bucket_property(0, statement), i, w, row(first + i, f"n{i}", 1.0 * i))
                   for i in range(count)]
    assert len(events) >= PROBE_MIN_ROWS * 4  # statistics read, filter columns first
    write_dir_stripes(root, DELTA, {0: events_table(events)}, rows_per_stripe=ROWS_PER_STRIPE)
    write_original(root / "000000_0", [row(i, "orig", 0.5) for i in range(3)])
    deleted = [(2, bucket_property(0), 7), (3, bucket_property(0), 5),
               (4, bucket_property(0), 100), (4, bucket_property(0, 1), 900),
               (0, bucket_property(0), 1)]
    assert len(deleted) == DELETED
    write_dir_stripes(root, "delete_delta_0000006_0000006_0000",
                      {0: delete_events(deleted, 6)})


@pytest.fixture
def root(tmp_path: Path) -> Path:
    _layout(tmp_path / "t")
    return tmp_path / "t"


def test_statistics_prove_constant_keys_only_where_they_hold(root: Path) -> None:
    orc = OrcFile(pafs.LocalFileSystem(), str(root / DELTA / "bucket_00000"))
    assert [orc.read_stripe(i, ["rowId"]).num_rows for i in range(orc.nstripes)] == [9000] * 4
    assert stripe_key_constants(orc) == [(2, bucket_property(0)), None, None,
                                         (5, bucket_property(0))]


@pytest.mark.parametrize("snapshot", [None, "t.t:6:9223372036854775807::3"])
@pytest.mark.parametrize(("columns", "where"), [
    (None, None), (["name"], None), (["amount"], "id % 7 = 1"), (None, "id % 7 = 1"),
    (["name"], "id >= 300000"),
])
@pytest.mark.parametrize("with_row_id", [False, True])
def test_lean_key_decoding_matches_the_heap_merge(
        root: Path, monkeypatch: pytest.MonkeyPatch, snapshot: str | None,
        columns: Sequence[str] | None, where: str | None, with_row_id: bool) -> None:
    reads: list[tuple[int, tuple[str, ...]]] = []
    original = OrcFile.read_stripe

    def observed(self: OrcFile, index: int, cols: Sequence[str]) -> pa.RecordBatch:
        if self.path.endswith(f"{DELTA}/bucket_00000"):
            reads.append((index, tuple(cols)))
        return original(self, index, cols)

    kwargs: dict[str, Any] = {"write_ids": snapshot, "columns": columns, "filter": where,
                              "with_row_id": with_row_id}
    with monkeypatch.context() as patch:
        patch.setattr(OrcFile, "read_stripe", observed)
        vectorized = acidstore.read_directory(root, reader="vectorized", **kwargs)
    merged = acidstore.read_directory(root, reader="merge", **kwargs)
    assert vectorized.equals(merged)
    expected = 36_000 + 3 - DELETED - (4500 - 1 if snapshot else 0)
    if where is None:
        assert vectorized.num_rows == expected
    # the vectorized read decoded stripes 0 and 3 (unless statistics excluded the filter)
    # without the two constant columns, the others with them
    lean = {i for i, cols in reads if "rowId" in cols and "originalTransaction" not in cols}
    full = {i for i, cols in reads if "originalTransaction" in cols}
    assert lean == {0, 3} & {i for i, _ in reads}
    assert full == {1, 2}


def _row_ids(case: str) -> tuple[list[int], int]:
    """2,000 rowIds broken as ``case`` says, and the rowId where the order breaks."""
    ids = list(range(2000))
    if case == "swapped inside a stripe":
        ids[10], ids[11] = 11, 10
        return ids, 10
    if case == "a rowId twice":
        ids[11] = 10
        return ids, 10
    if case == "the second stripe starts at the first one's last":
        return ids[:1000] + list(range(999, 1999)), 999
    return list(range(5000, 6000)) + ids[:1000], 0  # the second stripe starts below


@pytest.mark.parametrize("where", [None, "id < 1500", "id % 3 = 0"])
@pytest.mark.parametrize("case", [
    "swapped inside a stripe", "a rowId twice",
    "the second stripe starts at the first one's last", "the second stripe starts below"])
def test_constant_stripes_still_check_the_rowid_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, where: str | None) -> None:
    """A stripe whose keys are filled from statistics checks its rowIds' order as the full
    key check does, within the stripe and against the previous stripe's last key."""
    root = tmp_path / "t"
    prop = bucket_property(0)
    row_ids, bad = _row_ids(case)
    events = [(0, 1, prop, r, 1, row(i)) for i, r in enumerate(row_ids)]
    directory = root / "delta_0000001_0000001_0000"
    directory.mkdir(parents=True)
    (directory / ACID_VERSION_FILE).write_text(ACID_VERSION)
    path = directory / "bucket_00000"
    # uncompressed: pyarrow buffers compressed stripes and would write one stripe
    write_events(path, events_table(events), rows_per_stripe=500, compression="uncompressed")
    monkeypatch.setattr("acidstore.read.split_source.PROBE_MIN_ROWS", 1)
    orc = OrcFile(pafs.LocalFileSystem(), str(path))
    assert orc.nstripes == 2 and stripe_key_constants(orc) == [(1, prop)] * 2
    with pytest.raises(DataError, match=rf"out of ROW__ID order at \(1, {prop}, {bad}\)") as got:
        acidstore.read_directory(root, with_row_id=True, filter=where)
    assert str(path) in str(got.value)
