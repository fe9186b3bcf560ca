"""A filtered read skips a small file the process keeps when the file's statistics prove
that no row passes (``read.source.split_batches``: statistics of a kept file are read once):
one-row statements read their bucket's one-row deltas this way. Every read must answer what
the same read answers unfiltered, filtered afterwards, and what it answers with nothing kept
(``acidstore.io.immutable.set_cache_bytes(0)``)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from acidstore import Warehouse, config
from acidstore.format.orc.file_reader import OrcFile
from acidstore.io import immutable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
Plain = Callable[[pa.Table], pa.ChunkedArray]
FILTERS: dict[str, Plain] = {"id = 7": lambda t: pc.equal(t["id"], 7),
           "id IN (3, 20)": lambda t: pc.is_in(t["id"], pa.array([3, 20])),
           "id < 5": lambda t: pc.less(t["id"], 5),
           "id = 999": lambda t: pc.equal(t["id"], 999),
           "id > 25 AND id < 28": lambda t: pc.and_(pc.greater(t["id"], 25),
                                                     pc.less(t["id"], 28)),
           "v = 1": lambda t: pc.equal(t["v"], 1)}


@pytest.fixture
def nothing_kept() -> Iterator[None]:
    before = immutable.set_cache_bytes(0)
    try:
        yield
    finally:
        immutable.set_cache_bytes(before)


def _table(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA, bucket_by=["id"], buckets=2)
    for i in range(30):
        t.insert(pa.table({"id": [i], "v": [i % 3]}, schema=SCHEMA))
    t.update("id = 4", {"v": "v + 10"})
    t.update("id = 7", {"v": "v + 10"})
    t.delete("id = 20")
    t.delete("id = 26")
    time.sleep(2 * config.SETTLE_NS / 1e9)  # files changed within that are not kept


def _reads(wh: Warehouse) -> dict[str, pa.Table]:
    t = wh.table("db.t")
    whole = t.to_arrow(with_row_id=True)
    out = {}
    for text, plain in FILTERS.items():
        ours = t.to_arrow(filter=text, with_row_id=True).sort_by("id")
        expected = whole.filter(plain(whole)).sort_by("id")
        assert ours.equals(expected), text
        out[text] = ours
    return out


def test_filtered_reads_over_kept_small_files_answer_as_plain_ones(wh: Warehouse) -> None:
    _table(wh)
    first = _reads(wh)  # the files are read and kept
    location = wh.table("db.t").location
    delta = f"{location}/{sorted(d for d in os.listdir(location) if d.startswith('delta_'))[1]}"
    bucket = next(f for f in os.listdir(delta) if f.startswith("bucket_"))
    assert OrcFile(wh.filesystem, f"{delta}/{bucket}").held  # the new path is the one taken
    again = _reads(wh)  # now with the kept statistics
    assert all(again[k].equals(first[k]) for k in FILTERS)
    # the statistics a kept file answers from what an earlier open parsed are a fresh parse's
    path = f"{delta}/{bucket}"
    kept = [OrcFile(wh.filesystem, path).stripe_statistics(p) for p in ([0], [0, 1], [1])]
    before = immutable.set_cache_bytes(0)
    try:
        fresh = [OrcFile(wh.filesystem, path).stripe_statistics(p) for p in ([0], [0, 1], [1])]
    finally:
        immutable.set_cache_bytes(before)
    assert kept == fresh and fresh[1] is not None and fresh[1][0][0].minimum is not None


def test_the_same_reads_with_nothing_kept(wh: Warehouse, nothing_kept: None) -> None:
    _table(wh)
    _reads(wh)
