"""Stripe-range splits (``acidstore.read.ranges``): a large bucket file read as several
ranges of stripes, on several threads, must return exactly what the whole-file read returns
(the same rows in the same order, the same ROW__IDs), with delete events in some stripes, lean
key decoding in others, a filter, an aborted write id, the merge fallback, and a table split
both ways."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import acidfiles as af
import pyarrow.fs as pafs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acidstore.errors import CorruptFileError, DataError, InvalidInputError
from acidstore.format.writeids import ValidWriteIdList
from acidstore.read import ranges
from acidstore.read.hive_directory import _snapshot
from acidstore.read.ranges import divide, ranged_units, stripe_range, stripe_ranges
from acidstore.read.scan import Scan, discover_partitions
from acidstore.read.split_source import split_batches
from acidstore.read.splits import Split
from acidstore.read.vectorized import read_split

#: (write id, statement, events) in key order; ORC cuts the file every 9,000 events (see
#: tests/read/test_read_constant_keys.py): 4 stripes, stripe 0 of write id 2 alone and stripe 3 of
#: write id 5 alone (their keys decode lean), stripes 1 and 2 of two write ids or statements
STATEMENTS = ((2, 0, 9000), (3, 0, 4500), (4, 0, 4500), (4, 1, 4500), (5, 0, 13500))
ROWS_PER_STRIPE = 4500
STRIPES = 4
DELTA = "delta_0000002_0000005"
TOTAL = sum(count for _, _, count in STATEMENTS)


def _events() -> list[tuple[int, int, int, int, int, Any]]:
    events: list[tuple[int, int, int, int, int, Any]] = []
    for w, statement, count in STATEMENTS:
        first = 100_000 * w + 10_000 * statement
        prop = af.bucket_property(0, statement)
        events += [(0, w, prop, i, w, af.row(first + i, f"n{i}", 1.0 * i)) for i in range(count)]
    return events


DELETED = ((2, af.bucket_property(0), 7), (2, af.bucket_property(0), 8000),
           (3, af.bucket_property(0), 5), (5, af.bucket_property(0), 13_499),
           (0, af.bucket_property(0), 1))


def _layout(root: Path, deleted: Sequence[tuple[int, int, int]] = DELETED) -> None:
    """Write ids 2-5 in one multi-stripe bucket file (as a minor compaction leaves them), an
    original file beside it, and delete events in stripes 0, 1 and 3 (none in 2)."""
    af.write_dir_stripes(root, DELTA, {0: af.events_table(_events())},
                         rows_per_stripe=ROWS_PER_STRIPE)
    af.write_original(root / "000000_0", [af.row(i, "orig", 0.5) for i in range(3)])
    if deleted:
        af.write_dir_stripes(root, "delete_delta_0000006_0000006_0000",
                             {0: af.delete_events(deleted, 6)})


@pytest.fixture(autouse=True)
def _small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's files are small: cut them however small a range gets."""
    monkeypatch.setattr(ranges, "MIN_RANGE_BYTES", 1)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ranges") / "t"
    _layout(path)
    return path


def _scan(root: Path, threads: int, **kwargs: Any) -> Scan:
    fs = pafs.LocalFileSystem()
    write_ids, txns = _snapshot(kwargs.pop("write_ids", None), None)
    return Scan(fs, discover_partitions(fs, str(root)), write_ids, txns, threads=threads,
                **kwargs)


def _delta_split(scan: Scan) -> Split:
    return next(s for s in scan.splits if s.path.endswith(f"{DELTA}/bucket_00000"))


# --- cutting stripes into ranges -----------------------------------------------------------------


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=40), st.integers(1, 12))
def test_stripe_ranges_cover_every_stripe_once_in_order(rows: list[int], parts: int) -> None:
    ranges = stripe_ranges(rows, parts)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(rows)
    assert all(first < stop for first, stop in ranges)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert len(ranges) == min(parts, len(rows))


def test_stripe_ranges_balance_rows() -> None:
    assert stripe_ranges([10] * 8, 2) == [(0, 4), (4, 8)]
    assert stripe_ranges([10, 10, 10, 1], 2) == [(0, 2), (2, 4)]
    assert stripe_ranges([100, 1, 1, 1], 2) == [(0, 1), (1, 4)]
    assert stripe_ranges([5], 4) == [(0, 1)]


def test_a_range_outside_the_file_or_of_an_original_file_is_refused(root: Path) -> None:
    split = _delta_split(_scan(root, 1))
    fs = pafs.LocalFileSystem()
    bad = Split(**{**split.__dict__, "stripes": (2, STRIPES + 1)})
    with pytest.raises(CorruptFileError, match=f"has {STRIPES} stripes"):
        list(split_batches(fs, bad, ValidWriteIdList.all_valid(), None, need_keys=True))
    ranged = divide(fs, split, 2)[0]
    with pytest.raises(InvalidInputError, match="row batches"):
        list(split_batches(fs, ranged, ValidWriteIdList.all_valid(), None, need_keys=True,
                           batch_rows=1000))
    from acidstore.format.orc.file_reader import OrcFile
    original = next(s for s in _scan(root, 1).splits if s.synthetic is not None)
    with pytest.raises(InvalidInputError, match="without ACID columns"):
        stripe_range(Split(**{**original.__dict__, "stripes": (0, 1)}),
                     OrcFile(fs, original.path), batch_rows=None)


# --- range reads against the whole-file read ---------------------------------------------------


def _keys(batches: Sequence[Any]) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    for batch in batches:
        keys = batch.keys
        out += zip(keys.write_id.tolist(), keys.bucket.tolist(), keys.row_id.tolist(),
                   strict=True)
    return out


def _rows(batches: Sequence[Any]) -> list[Any]:
    return [r for b in batches for r in b.row.to_pylist()]


@pytest.mark.parametrize("parts", [2, 3, STRIPES])
@pytest.mark.parametrize("limit", [10_000_000, 2])
def test_ranges_read_what_the_whole_file_reads(root: Path, parts: int, limit: int) -> None:
    """Every range of the file through the vectorized reader (and, over the delete-event
    limit, its merge fallback), concatenated in range order, against the whole file."""
    fs = pafs.LocalFileSystem()
    split = _delta_split(_scan(root, 1))
    ids = ValidWriteIdList.all_valid()
    whole = list(read_split(fs, split, ids, None, with_row_id=True, delete_event_limit=limit))
    ranges = divide(fs, split, parts)
    assert len(ranges) == parts
    cut = [b for r in ranges
           for b in read_split(fs, r, ids, None, with_row_id=True, delete_event_limit=limit)]
    assert len(_keys(whole)) == TOTAL - 4
    assert _keys(cut) == _keys(whole)
    assert _rows(cut) == _rows(whole)


@pytest.mark.parametrize("snapshot", [None, "t.t:6:9223372036854775807::3"])
@pytest.mark.parametrize("where", [None, "id % 7 = 1", "id >= 400000"])
@pytest.mark.parametrize("with_row_id", [False, True])
def test_threaded_scan_with_ranges_equals_one_thread(
        root: Path, snapshot: str | None, where: str | None, with_row_id: bool) -> None:
    one = _scan(root, 1, write_ids=snapshot, filter=where, with_row_id=with_row_id)
    four = _scan(root, 4, write_ids=snapshot, filter=where, with_row_id=with_row_id)
    # the large file is read as ranges: the test covers the ranged path
    assert len(four._parallel_units()) > len(four._units())
    assert four.to_table().equals(one.to_table())


def test_the_merge_reader_keeps_whole_files(root: Path) -> None:
    scan = _scan(root, 4, reader="merge")
    assert len(scan._parallel_units()) == len(scan._units())
    assert scan.to_table().equals(_scan(root, 1, reader="vectorized").to_table())


def test_only_files_above_a_threads_share_are_cut(root: Path) -> None:
    scan = _scan(root, 2)
    units = scan._units()
    ranged = ranged_units(scan._fs, units, 2)
    delta = [s for u in ranged for _, s in u if s.path.endswith(f"{DELTA}/bucket_00000")]
    assert [s.stripes for s in delta] == [(0, 2), (2, 4)]
    # the original file (tiny) stays whole, and one thread cuts nothing
    assert all(s.stripes is None for u in ranged for _, s in u if s.synthetic is not None)
    assert ranged_units(scan._fs, units, 1) == units


def test_a_file_is_cut_only_into_ranges_of_min_range_bytes(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scan = _scan(root, 4)
    size = _delta_split(scan).size
    assert size is not None
    for floor, parts in ((size // 2, 2), (size // 2 + 1, 1), (size + 1, 1)):
        monkeypatch.setattr(ranges, "MIN_RANGE_BYTES", floor)
        cut = [s for u in ranged_units(scan._fs, scan._units(), 4) for _, s in u
               if s.path.endswith(f"{DELTA}/bucket_00000")]
        assert len(cut) == parts


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sets(st.tuples(st.sampled_from([(2, 0), (3, 0), (4, 0), (4, 1), (5, 0)]),
                         st.integers(0, 13_499)), max_size=30),
       st.integers(2, STRIPES))
def test_ranges_with_any_deletes_equal_the_whole_file(
        tmp_path_factory: pytest.TempPathFactory,
        deleted: set[tuple[tuple[int, int], int]], parts: int) -> None:
    root = tmp_path_factory.mktemp("any") / "t"
    _layout(root, [(w, af.bucket_property(0, s), r) for (w, s), r in deleted])
    fs = pafs.LocalFileSystem()
    split = _delta_split(_scan(root, 1))
    ids = ValidWriteIdList.all_valid()
    whole = list(read_split(fs, split, ids, [0], with_row_id=True))
    cut = [b for r in divide(fs, split, parts)
           for b in read_split(fs, r, ids, [0], with_row_id=True)]
    assert _keys(cut) == _keys(whole)
    assert _rows(cut) == _rows(whole)
    assert _scan(root, parts).to_table().equals(_scan(root, 1).to_table())


def test_a_file_out_of_order_at_a_range_boundary_is_refused(tmp_path: Path) -> None:
    """The second stripe starts with the first stripe's last ROW__ID: each stripe is in order
    on its own, so only the check carried across the boundary sees it, whole-file or ranged."""
    prop, per_stripe = af.bucket_property(0), TOTAL // STRIPES  # where ORC cuts (see above)
    events = [(0, 2, prop, i, 2, af.row(i, "a", 0.0)) for i in range(per_stripe)]
    events += [(0, 2, prop, per_stripe - 1 + i, 2, af.row(i, "b", 0.0))
               for i in range(per_stripe)]
    root = tmp_path / "t"
    af.write_dir_stripes(root, "delta_0000002_0000002", {0: af.events_table(events)},
                         rows_per_stripe=ROWS_PER_STRIPE)
    fs = pafs.LocalFileSystem()
    split = next(iter(_scan(root, 1).splits))
    ids = ValidWriteIdList.all_valid()
    second = divide(fs, split, 2)[1]
    assert second.stripes == (1, 2)
    for read in (split, second):
        with pytest.raises(DataError, match="out of ROW__ID order"):
            list(split_batches(fs, read, ids, None, need_keys=True))
    for threads in (1, 2):  # ROW__IDs asked for: a scan without them decodes no keys
        scan = _scan(root, threads, with_row_id=True)
        assert len(scan._parallel_units()) == threads
        with pytest.raises(DataError, match="out of ROW__ID order"):
            scan.to_table()
