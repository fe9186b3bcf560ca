"""The streaming compactor: same output as holding a bucket in memory, in bounded memory.

- ``EventFileWriter`` writes batch by batch what ``write_event_file`` writes at once: the
  same events, stripes and Hive metadata (key index = last key of each real stripe, event
  counts), with every codec; a failed write leaves no file.
- ``merge_sorted`` equals a stable sort of its concatenated inputs and refuses an unsorted
  one.
- On a table with many deltas, delete deltas, a multi-statement transaction and an aborted
  write: a minor compaction's files hold exactly the events the old in-memory compactor
  wrote (every valid event, concatenated and sorted), a major's exactly the rows and
  ROW__IDs the plain reader returns; and no unit ever holds more than a few inputs' batches
  while the bucket holds many times more rows.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.orc as po
import pytest
from compaction_support import aborted_write, make_rows, new_table

from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import CorruptFileError, DataError
from acidstore.format.orc.acid_metadata import parse_acid_stats
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.file_writer import DELTA_STRIPE_SIZE, write_event_file
from acidstore.format.orc.schema import (
    ACID_FIELDS,
    BUCKET,
    CURRENT_TRANSACTION,
    ORIGINAL_TRANSACTION,
    ROW_ID,
    event_schema,
)
from acidstore.format.orc.stream import EventFileWriter
from acidstore.read.split_source import split_batches
from acidstore.read.splits import Split
from acidstore.read.vectorized import read_split
from compaction import compact
from compaction.execute import OUTPUT_STRIPE_SIZE, prepare_outputs, run_bucket
from compaction.plan import BucketWork, plan_partition_compaction
from compaction.streams import Keyed, merge_sorted

USER = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
LOCAL = pafs.LocalFileSystem()


def _events(n: int, seed: int = 0) -> pa.Table:
    """``n`` insert events of one write id in key order, with incompressible strings (so a
    small stripe size gives many stripes)."""
    rng = np.random.default_rng(seed)
    row = pa.StructArray.from_arrays(
        [pa.array(np.arange(n)), pa.array([f"{v:x}" for v in rng.integers(0, 2**62, n)])],
        fields=list(USER))
    return pa.Table.from_arrays([
        pa.array(np.zeros(n, np.int32)), pa.array(np.ones(n, np.int64)),
        pa.array(np.full(n, 536870912, np.int32)), pa.array(np.arange(n, dtype=np.int64)),
        pa.array(np.ones(n, np.int64)), row], schema=event_schema(USER))


def _stripe_last_keys(path: str) -> list[tuple[int, int, int]]:
    orc = OrcFile(LOCAL, path)
    columns = orc.physical_columns([ORIGINAL_TRANSACTION, BUCKET, ROW_ID], [])
    out = []
    for i in range(orc.nstripes):
        b = orc.canonical(orc.read_stripe(i, columns))
        out.append(tuple(int(b.column(c)[-1].as_py())
                         for c in (ORIGINAL_TRANSACTION, BUCKET, ROW_ID)))
    return out  # type: ignore[return-value]


@pytest.mark.parametrize("compression", ["uncompressed", "zlib", "snappy", "lz4", "zstd"])
def test_stream_writer_matches_the_whole_table_writer(tmp_path: Path, compression: str
                                                      ) -> None:
    events = _events(40_000)
    streamed, whole = str(tmp_path / "streamed"), str(tmp_path / "whole")
    with EventFileWriter(LOCAL, streamed, events.schema, compression=compression,
                         stripe_size=64 * 1024, batch_rows=3000) as writer:
        for batch in events.to_batches(max_chunksize=7001):
            writer.write(batch)
        written = writer.close()
    reference = write_event_file(LOCAL, whole, events, compression=compression,
                                 stripe_size=64 * 1024)
    assert po.ORCFile(streamed).read().equals(events)
    orc = OrcFile(LOCAL, streamed)
    assert orc.nstripes > 3  # the stripe ends were found while streaming
    assert orc.key_index == _stripe_last_keys(streamed)
    assert parse_acid_stats(orc.user_metadata["hive.acid.stats"].decode()) == \
        parse_acid_stats(OrcFile(LOCAL, whole).user_metadata["hive.acid.stats"].decode())
    assert orc.user_metadata["hive.acid.version"] == b"2"
    assert (written.rows, written.last_key) == (reference.rows, reference.last_key)
    assert written.size == os.path.getsize(streamed)
    assert writer.largest_chunk == 3000


def test_stream_writer_leaves_no_file_when_it_fails(tmp_path: Path) -> None:
    path = str(tmp_path / "bucket_00000")
    events = _events(100)
    with pytest.raises(RuntimeError), EventFileWriter(LOCAL, path, events.schema) as writer:
        writer.write(events)
        raise RuntimeError("the input failed")
    assert not os.path.exists(path)
    writer = EventFileWriter(LOCAL, path, events.schema)
    with pytest.raises(ValueError, match="schema"):
        writer.write(events.select(list(ACID_FIELDS[:5])))
    writer.abort()
    assert not os.path.exists(path)
    with pytest.raises(ValueError, match="aborted"):
        writer.write(events)


def test_stream_writer_without_events_writes_an_empty_event_file(tmp_path: Path) -> None:
    path = str(tmp_path / "bucket_00000")
    written = EventFileWriter(LOCAL, path, event_schema(USER)).close()
    orc = OrcFile(LOCAL, path)
    assert (orc.nrows, orc.nstripes, orc.key_index) == (0, 0, [])
    assert orc.user_metadata["hive.acid.stats"] == b"0,0,0"
    assert (written.rows, written.last_key, written.size) == (0, None, os.path.getsize(path))


def _keyed(table: pa.Table, chunk: int) -> Iterator[Keyed]:
    for batch in table.to_batches(max_chunksize=chunk):
        yield Keyed(batch, (batch.column("a").to_numpy(), batch.column("b").to_numpy()))


def _sorted_inputs(rng: np.random.Generator, count: int, high: int) -> list[pa.Table]:
    inputs = []
    for i in range(count):
        n = int(rng.integers(0, 300))
        a, b = np.sort(rng.integers(0, high, n)), rng.integers(0, 3, n)
        order = np.lexsort((b, a))
        inputs.append(pa.table({"a": a[order], "b": b[order], "src": np.full(n, i),
                                "pos": np.arange(n)}))
    return inputs


@pytest.mark.parametrize("seed", range(12))
def test_merge_sorted_is_a_stable_sort_of_its_inputs(seed: int) -> None:
    """Many repeated keys, also across an input's batches (chunks of 1 to 40 rows)."""
    rng = np.random.default_rng(seed)
    inputs = _sorted_inputs(rng, 6, 30)
    merged = merge_sorted([_keyed(t, int(rng.integers(1, 40))) for t in inputs],
                          [f"input {i}" for i in range(6)])
    got = pa.concat_tables(merged)
    everything = pa.concat_tables(inputs)
    expected = everything.take(pc.sort_indices(everything, [("a", "ascending"),
                                                            ("b", "ascending")]))
    assert got.equals(expected)


def test_merge_sorted_holds_one_batch_per_input() -> None:
    rng = np.random.default_rng(3)
    inputs = _sorted_inputs(rng, 8, 10**12)  # unique keys, as ROW__IDs are
    merged = list(merge_sorted([_keyed(t, 25) for t in inputs], [str(i) for i in range(8)]))
    assert sum(t.num_rows for t in merged) > 5 * 8 * 25
    assert max(t.num_rows for t in merged) <= 8 * 25


def test_merge_sorted_refuses_an_unsorted_input() -> None:
    good = pa.table({"a": [1, 2, 3], "b": [0, 0, 0]})
    bad = pa.table({"a": [1, 5, 4], "b": [0, 0, 0]})
    with pytest.raises(DataError, match=r"out of order at key \(4, 0\).*bad"):
        list(merge_sorted([_keyed(good, 2), _keyed(bad, 10)], ["good", "bad"]))
    across = pa.table({"a": [1, 5, 2, 6], "b": [0, 0, 0, 0]})  # sorted within each batch only
    with pytest.raises(DataError, match="across"):
        list(merge_sorted([_keyed(across, 2)], ["across"]))


# --- whole compactions -------------------------------------------------------------------------

DELTAS, ROWS = 24, 150


@pytest.fixture
def busy(wh: Warehouse) -> Table:
    """One bucket: 24 insert deltas of 150 rows, deletes and updates reaching into all of
    them (fewer than 300 delete events in all), a transaction of two inserts and a delete
    (statement ids 0-2), an aborted write."""
    t = new_table(wh, buckets=1, partitioned=False)
    for k in range(DELTAS):
        t.insert(make_rows(range(ROWS * k, ROWS * (k + 1)), dt=None).drop_columns(["dt"]))
    t.delete("id % 40 = 0")
    t.update("id % 53 = 3", {"amount": "amount + 1"})
    with wh.transaction() as txn:
        bound = txn.table(t.name)
        bound.insert(make_rows(range(10_000, 10_040), dt=None).drop_columns(["dt"]))
        bound.insert(make_rows(range(20_000, 20_040), dt=None).drop_columns(["dt"]))
        bound.delete("id % 61 = 5")
    aborted_write(wh, t.name, make_rows(range(30_000, 30_050), dt=None).drop_columns(["dt"]))
    t.delete("id % 71 = 1")
    return t


def _files(directory: str) -> list[str]:
    return sorted(os.path.join(directory, n) for n in os.listdir(directory)
                  if n.startswith("bucket_"))


def _in_memory_minor(work: BucketWork, delete: bool) -> pa.Table:
    """What the old compactor wrote: every valid event of the inputs, concatenated and
    stable-sorted by (originalTransaction, bucket, rowId ascending, currentTransaction
    descending)."""
    parts = []
    for source in (work.deletes if delete else work.inserts):
        table = po.ORCFile(source.path).read().rename_columns(list(ACID_FIELDS))
        valid = [work.write_ids.is_write_id_valid(w)
                 for w in table.column(CURRENT_TRANSACTION).to_pylist()]
        parts.append(table.filter(pa.array(valid, pa.bool_())))
    events = pa.concat_tables(parts)
    return events.take(pc.sort_indices(events, [
        (ORIGINAL_TRANSACTION, "ascending"), (BUCKET, "ascending"), (ROW_ID, "ascending"),
        (CURRENT_TRANSACTION, "descending")]))


def _plan(t: Table, kind: str) -> tuple[list[BucketWork], int]:
    wh = handle_of(t).core
    txn = TransactionCore.begin(wh, kind="compaction")
    write_ids = wh.metastore.valid_write_ids(t.name, txn.snapshot, txn.txn_id).to_compactor()
    plan = plan_partition_compaction(handle_of(t).filesystem, "", t.location, kind,  # type: ignore[arg-type]
                                     schema=handle_of(t).info.schema, write_ids=write_ids,
                                     txns=txn.snapshot, txn_id=txn.txn_id,
                                     compression=t.compression)
    txn.abort("test: only the plan and its units are wanted")
    return list(plan.work), txn.txn_id


def test_minor_writes_what_the_in_memory_compactor_wrote(busy: Table) -> None:
    work, _ = _plan(busy, "minor")
    assert len(work) == 1 and len(work[0].inserts) > DELTAS and len(work[0].deletes) >= 4
    expected = {False: _in_memory_minor(work[0], False), True: _in_memory_minor(work[0], True)}
    result = compact(busy, "minor")
    assert result.compacted
    for name, delete in ((result.partitions[0].outputs[0], False),
                         (result.partitions[0].outputs[1], True)):
        files = _files(os.path.join(busy.location, name))
        assert len(files) == 1
        got = po.ORCFile(files[0]).read()
        assert got.equals(expected[delete].cast(got.schema)), name
        assert OrcFile(LOCAL, files[0]).key_index == _stripe_last_keys(files[0])


def test_major_writes_the_plain_readers_rows_in_row_id_order(busy: Table) -> None:
    before = busy.to_arrow(with_row_id=True)
    result = compact(busy, "major")
    assert result.compacted
    files = _files(os.path.join(busy.location, result.partitions[0].outputs[0]))
    assert len(files) == 1
    _assert_base_holds(busy, before, po.ORCFile(files[0]).read())
    after = busy.to_arrow(with_row_id=True)
    assert after.sort_by("id").equals(before.select(after.schema.names).sort_by("id"))


def test_a_major_base_has_stripes_of_the_output_stripe_size(busy: Table) -> None:
    """A base larger than the stripe size is written as several stripes (not one stripe of
    the whole bucket), each with its key index entry, holding the plain reader's rows; the
    table reads the same rows through them."""
    assert OUTPUT_STRIPE_SIZE == DELTA_STRIPE_SIZE
    before = busy.to_arrow(with_row_id=True)
    work, _ = _plan(busy, "major")
    prepare_outputs(work)
    # uncompressed: ORC counts a compressed stream's bytes per 64 KiB block, more than the
    # small columns of this bucket hold, so only without a codec do they fill small stripes
    unit = dataclasses.replace(work[0], compression="uncompressed")
    output = run_bucket(unit, batch_rows=256, stripe_size=16 * 1024)
    (path,) = (f.path for f in output.files)
    orc = OrcFile(LOCAL, path)
    assert orc.nstripes > 3
    assert orc.key_index == _stripe_last_keys(path)
    base = po.ORCFile(path).read()
    _assert_base_holds(busy, before, base)
    split = Split(path=path, bucket_id=0, min_write_id=0, max_write_id=0, statement_id=0,
                  rows_valid=True)
    by_stripe = list(read_split(LOCAL, split, work[0].write_ids, None, with_row_id=True))
    assert len(by_stripe) == orc.nstripes > 3
    keys = [b.keys for b in by_stripe if b.keys is not None]
    assert np.concatenate([k.row_id for k in keys]).tolist() == base.column(ROW_ID).to_pylist()
    assert pa.chunked_array([b.row for b in by_stripe]).combine_chunks().equals(
        base.column("row").combine_chunks())


def _assert_base_holds(busy: Table, before: pa.Table, base: pa.Table) -> None:
    """``base`` holds the rows of ``before`` (the plain reader's, with ROW__IDs) as insert
    events in ROW__ID order, each with its own write id as currentTransaction."""
    ids = before.column("row__id").combine_chunks()
    order = pc.sort_indices(pa.table({"w": ids.field("writeid"), "b": ids.field("bucketid"),
                                      "r": ids.field("rowid")}),
                            [("w", "ascending"), ("b", "ascending"), ("r", "ascending")])
    expected = before.take(order)
    assert base.column(ORIGINAL_TRANSACTION).to_pylist() == \
        expected.column("row__id").combine_chunks().field("writeid").to_pylist()
    assert base.column(ROW_ID).to_pylist() == \
        expected.column("row__id").combine_chunks().field("rowid").to_pylist()
    assert base.column(BUCKET).to_pylist() == \
        expected.column("row__id").combine_chunks().field("bucketid").to_pylist()
    assert base.column(CURRENT_TRANSACTION).equals(base.column(ORIGINAL_TRANSACTION))
    row = base.column("row").combine_chunks()
    for name in handle_of(busy).info.schema.names:
        assert row.field(name).to_pylist() == expected.column(name).to_pylist(), name
    assert len(set(base.column(ORIGINAL_TRANSACTION).to_pylist())) > DELTAS


def _largest_stripe(path: str) -> int:
    orc = OrcFile(LOCAL, path)
    return max(int(orc.read_stripe(i, orc.physical_columns([ROW_ID], [])).num_rows)
               for i in range(orc.nstripes))


@pytest.mark.parametrize("kind", ["minor", "major"])
def test_a_unit_holds_a_few_batches_not_its_bucket(busy: Table, kind: str) -> None:
    """Inputs are decoded 64 rows at a time, and a merged round holds at most one such batch
    per input. The insert inputs never overlap in keys, so a round holds one of them; the
    delete inputs (at most 5) all overlap. The old compactor held the whole bucket
    (> 3,000 events) at once."""
    work, _ = _plan(busy, kind)
    prepare_outputs(work)
    unit = work[0]
    output = run_bucket(unit, batch_rows=64)
    assert output.rows > 3_000
    assert 0 < output.largest_batch <= 64 * max(1, len(unit.deletes))
    assert output.largest_batch <= 64 * 5


def test_batches_of_rows_decode_what_stripes_decode(busy: Table, tmp_path: Path) -> None:
    """The compactor reads row batches (``batch_rows``) where readers read stripes: the same
    rows, ROW__IDs and columns, also for a subset of the row's fields and for a file read up
    to a logical length (a streaming delta's side file)."""
    work, _ = _plan(busy, "major")
    for split in work[0].splits:
        for positions in (None, [0, 2]):
            by_stripe = list(split_batches(LOCAL, split, work[0].write_ids, positions,
                                           need_keys=True))
            by_rows = list(split_batches(LOCAL, split, work[0].write_ids, positions,
                                         need_keys=True, batch_rows=7))
            assert max(b.num_rows for b in by_rows) <= 7
            for name in ("write_id", "bucket", "row_id"):
                assert np.array_equal(
                    np.concatenate([getattr(b.keys, name) for b in by_stripe]),
                    np.concatenate([getattr(b.keys, name) for b in by_rows]))
            assert pa.chunked_array([b.row for b in by_stripe]).equals(
                pa.chunked_array([b.row for b in by_rows]))
    events = _events(5_000)
    path = str(tmp_path / "bucket_00000")
    write_event_file(LOCAL, path, events, stripe_size=64 * 1024)
    size = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(b"half-flushed bytes past the logical length")
    orc = OrcFile(LOCAL, path, logical_length=size)
    columns = orc.physical_columns([ROW_ID], [1])
    stripes = pa.Table.from_batches(list(orc.stripes(columns)))
    batches = list(orc.batches(columns, 999))
    assert max(b.num_rows for b in batches) == 999
    assert pa.Table.from_batches(batches).equals(stripes)
    assert stripes.column("row").type == pa.struct([USER.field("s")])
    with pytest.raises(CorruptFileError, match="bucket_00000"):
        list(OrcFile(LOCAL, path).batches(columns, 999))  # the bytes past it are not ORC
