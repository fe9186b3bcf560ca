"""Unit tests of the readers' building blocks: the vectorized reader's ``DeleteRegistry``, the
merge reader's ``surviving`` and the ORC footer rewrite ``add_user_metadata``.

Registry and merge are checked against brute-force Python sets with hypothesis; keys use
Hive's order (writeId, bucket property as a *signed* int, rowId), including negative and large
bucket properties, many runs and duplicate delete events.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po
import pyorc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acidstore.engine.handle import handle_of
from acidstore.errors import CorruptFileError, MissingDataError
from acidstore.format.orc.footer import add_user_metadata
from acidstore.read.heap_merge import surviving
from acidstore.read.keys import KeyArrays, constant_keys
from acidstore.read.registry import DeleteRegistry

Key = tuple[int, int, int]
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MAX = 2**63 - 1


def arrays(keys: Sequence[Key]) -> KeyArrays:
    return KeyArrays(np.array([k[0] for k in keys], dtype=np.int64),
                     np.array([k[1] for k in keys], dtype=np.int32),
                     np.array([k[2] for k in keys], dtype=np.int64))


write_ids = st.one_of(st.integers(0, 4), st.sampled_from([10**12, LONG_MAX]))
buckets = st.one_of(
    st.sampled_from([INT_MIN, -1, 0, 1, 536870912, 536870913, 536936448, 537001985,
                     805244927, INT_MAX]),
    st.integers(INT_MIN, INT_MAX))
row_ids = st.one_of(st.integers(0, 30), st.sampled_from([2**40, LONG_MAX]))
keys_st = st.tuples(write_ids, buckets, row_ids)


@given(deletes=st.lists(keys_st, max_size=60), others=st.lists(keys_st, max_size=60))
def test_registry_membership_matches_a_set(deletes: list[Key], others: list[Key]) -> None:
    """A batch of ROW__IDs (sorted, as every ACID file stores them) against the registry."""
    registry = DeleteRegistry(arrays(deletes))
    assert len(registry) == len(set(deletes))
    query = sorted(set(others) | set(deletes[::2]))  # Python tuple order = signed order
    got = registry.deleted(arrays(query))
    assert got.dtype == np.bool_
    assert got.tolist() == [k in set(deletes) for k in query]
    assert registry.nbytes <= 24 * len(deletes)


@given(write_id=write_ids, bucket=buckets,
       deleted_rows=st.lists(row_ids, max_size=40), batch_rows=st.sets(row_ids, max_size=40))
def test_registry_single_run_batch(write_id: int, bucket: int, deleted_rows: list[int],
                                   batch_rows: set[int]) -> None:
    """The common case: a whole batch from one delta file of one statement (one run)."""
    deletes = [(write_id, bucket, r) for r in deleted_rows]
    # deletes of neighbouring runs must not leak into this one
    deletes += [(write_id, bucket - 1 if bucket > INT_MIN else bucket + 1, r)
                for r in batch_rows]
    deletes += [(write_id + 1 if write_id < LONG_MAX else write_id - 1, bucket, r)
                for r in batch_rows]
    registry = DeleteRegistry(arrays(deletes))
    query = [(write_id, bucket, r) for r in sorted(batch_rows)]
    expected = [r in set(deleted_rows) for r in sorted(batch_rows)]
    assert registry.deleted(arrays(query)).tolist() == expected
    # a stripe whose statistics prove the pair: its keys are views of it, looked up directly
    lean = constant_keys(np.array(sorted(batch_rows), dtype=np.int64), (write_id, bucket))
    assert registry.deleted(lean).tolist() == expected
    kept = lean.take(np.array([r % 2 == 0 for r in sorted(batch_rows)], dtype=np.bool_))
    assert kept.constant == (write_id, bucket)
    assert registry.deleted(kept).tolist() == [r in set(deleted_rows)
                                               for r in sorted(batch_rows) if r % 2 == 0]
    assert kept.write_id.tolist() == [write_id] * len(kept)
    assert kept.bucket.tolist() == [bucket] * len(kept)


@given(runs=st.integers(1, 300), data=st.data())
def test_registry_many_runs(runs: int, data: st.DataObject) -> None:
    """Every event its own (writeId, bucket) run: the worst case for the run index."""
    pairs = data.draw(st.lists(st.tuples(write_ids, buckets), min_size=runs, max_size=runs,
                               unique=True), label="pairs")
    deletes = [(w, b, i % 3) for i, (w, b) in enumerate(pairs)]
    registry = DeleteRegistry(arrays(deletes))
    query = sorted({(w, b, r) for w, b in pairs for r in range(3)})
    assert registry.deleted(arrays(query)).tolist() == [k in set(deletes) for k in query]
    assert registry.nbytes <= 24 * len(deletes)


def test_registry_signed_bucket_order_and_duplicates() -> None:
    """Bucket properties compare as signed 32-bit ints (INT_MIN < -1 < 0 < INT_MAX), and a row
    deleted by several write ids is one entry."""
    deletes = [(1, INT_MAX, 0), (1, -1, 5), (1, INT_MIN, 7), (1, -1, 5), (1, -1, 5),
               (0, 536870912, 3), (0, 536870912, 3)]
    registry = DeleteRegistry(arrays(deletes))
    assert len(registry) == 4
    query = [(0, 536870912, 2), (0, 536870912, 3), (1, INT_MIN, 7), (1, -1, 4), (1, -1, 5),
             (1, 0, 5), (1, INT_MAX, 0), (1, INT_MAX, 1)]
    assert query == sorted(query)
    assert registry.deleted(arrays(query)).tolist() == [
        False, True, True, False, True, False, True, False]
    assert registry.nbytes == 4 * 8 + 4 * (8 + 4 + 4)  # 4 row ids in 4 runs


def test_registry_empty() -> None:
    registry = DeleteRegistry(arrays([]))
    assert len(registry) == 0
    assert registry.nbytes == 0
    assert registry.deleted(arrays([(1, 0, 0), (2, 0, 1)])).tolist() == [False, False]
    assert DeleteRegistry(arrays([(1, 0, 0)])).deleted(arrays([])).tolist() == []


def test_registry_bytes_per_event() -> None:
    """8 bytes per event in one run; 24 when every event is its own run."""
    one_run = DeleteRegistry(arrays([(5, 536870912, r) for r in range(1000)]))
    assert one_run.nbytes == 1000 * 8 + 16
    own_runs = DeleteRegistry(arrays([(w, 536870912, 0) for w in range(1000)]))
    assert own_runs.nbytes == 1000 * 24


# --- merge: surviving -----------------------------------------------------------------------


@given(rows=st.sets(keys_st, max_size=50), deletes=st.lists(keys_st, max_size=50),
       data=st.data())
def test_surviving_matches_a_set(rows: set[Key], deletes: list[Key], data: st.DataObject
                                 ) -> None:
    """An insert survives iff no delete event carries its key; deletes may repeat, may hit
    nothing, and arrive sorted (as they stream from the delete files)."""
    hits = data.draw(st.lists(st.sampled_from(sorted(rows)), max_size=10) if rows
                     else st.just([]), label="hits")
    all_deletes = sorted(deletes + hits)
    ordered = sorted(rows)
    keep = surviving(arrays(ordered), arrays(all_deletes))
    assert keep.dtype == np.bool_
    assert keep.tolist() == [k not in set(all_deletes) for k in ordered]


def test_surviving_examples() -> None:
    rows = [(1, INT_MIN, 0), (1, -1, 0), (1, 0, 0), (1, 0, 1), (2, 536870912, 0)]
    deletes = [(0, 0, 0), (1, -1, 0), (1, 0, 1), (1, 0, 1), (3, 0, 0)]
    assert surviving(arrays(rows), arrays(deletes)).tolist() == [
        True, False, True, False, True]
    assert surviving(arrays(rows), arrays([])).tolist() == [True] * 5
    assert surviving(arrays([]), arrays(deletes)).tolist() == []


# --- add_user_metadata ------------------------------------------------------------------------

COMPRESSIONS = ["uncompressed", "zlib", "snappy", "lz4", "zstd"]


BLOCK = 64 * 1024  # the smallest compression block the ORC C++ writer accepts


def orc_bytes(table: pa.Table, compression: str, *, rows_per_stripe: int | None = None
              ) -> bytes:
    sink = pa.BufferOutputStream()
    if rows_per_stripe is None:
        po.write_table(table, sink, compression=compression, compression_block_size=BLOCK)
    else:
        po.write_table(table, sink, compression=compression, compression_block_size=BLOCK,
                       batch_size=rows_per_stripe, stripe_size=1)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def postscript(data: bytes) -> dict[int, int]:
    """The varint fields of an ORC postscript (1 footerLength, 2 compression, 3 block size)."""
    raw = data[len(data) - 1 - data[-1]:-1]
    fields: dict[int, int] = {}
    pos = 0

    def varint() -> int:
        nonlocal pos
        value, shift = 0, 0
        while True:
            byte = raw[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while pos < len(raw):
        key = varint()
        if (key & 7) == 0:
            fields[key >> 3] = varint()
        elif (key & 7) == 2:
            length = varint()
            pos += length
        else:
            raise AssertionError(f"unexpected wire type in postscript: {key & 7}")
    return fields


def footer_length(data: bytes) -> int:
    return postscript(data)[1]


def footer_chunks(data: bytes) -> list[tuple[bool, int]]:
    """(is_original, length) of each chunk of the (compressed) footer stream."""
    end = len(data) - 1 - data[-1]
    pos = end - footer_length(data)
    chunks = []
    while pos < end:
        header = int.from_bytes(data[pos:pos + 3], "little")
        chunks.append((bool(header & 1), header >> 1))
        pos += 3 + (header >> 1)
    assert pos == end
    return chunks


def sample_table(n: int = 500) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()),
                     "s": pa.array([f"value {i}" if i % 7 else None for i in range(n)]),
                     "nested": pa.array([{"a": i, "b": float(i)} for i in range(n)])})


ReadBack = tuple[dict[str, bytes], pa.Table, dict[str, bytes], list[tuple[object, ...]]]


def read_back(data: bytes) -> ReadBack:
    """(metadata, table) as pyarrow reads them, then (metadata, rows) as pyorc (the ORC C++
    reader) reads them."""
    arrow = po.ORCFile(pa.BufferReader(data))
    arrow_meta = {k.decode(): bytes(v) for k, v in dict(arrow.metadata or {}).items()}
    reader = pyorc.Reader(io.BytesIO(data))
    return arrow_meta, arrow.read(), dict(reader.user_metadata), list(reader)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_add_user_metadata_every_compression(compression: str) -> None:
    table = sample_table()
    original = orc_bytes(table, compression, rows_per_stripe=128)
    items = {"hive.acid.key.index": b"1,536870912,127;1,536870912,255;",
             "hive.acid.stats": b"500,0,0", "hive.acid.version": b"2",
             "binary \u00e9": bytes(range(256))}
    data = add_user_metadata(original, items)
    # the stripes are untouched: everything before the old footer is byte-identical
    arrow_before = po.ORCFile(pa.BufferReader(original))
    if compression == "uncompressed":
        assert arrow_before.nstripes == 4
    footer_start = len(original) - 1 - original[-1] - footer_length(original)
    assert data[:footer_start] == original[:footer_start]
    arrow_meta, arrow_table, orc_meta, orc_rows = read_back(data)
    assert arrow_meta == items
    assert orc_meta == items
    assert arrow_table.equals(table)
    assert arrow_table.equals(arrow_before.read())
    assert orc_rows == [(r["id"], r["s"], (r["nested"]["a"], r["nested"]["b"]))
                        for r in table.to_pylist()]
    assert po.ORCFile(pa.BufferReader(data)).nstripes == arrow_before.nstripes


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_add_user_metadata_larger_than_a_compression_block(compression: str) -> None:
    """Metadata bigger than the file's compression block (64 KiB here) is split into several
    uncompressed chunks, each at most one block."""
    table = sample_table(50)
    original = orc_bytes(table, compression)
    items = {"big": bytes(i % 251 for i in range(300_000)),
             "key.index": b"".join(b"%d,536870912,%d;" % (i, i) for i in range(5000))}
    data = add_user_metadata(original, items)
    arrow_meta, arrow_table, orc_meta, _ = read_back(data)
    assert arrow_meta == items
    assert orc_meta == items
    assert arrow_table.equals(table)
    if compression != "uncompressed":
        # Hive's (Java) reader refuses any chunk longer than the block ("Buffer size too
        # small"), so the appended metadata must come in block-sized original chunks
        assert postscript(data)[3] == BLOCK
        before, after = footer_chunks(original), footer_chunks(data)
        assert after[:len(before)] == before
        added = after[len(before):]
        assert len(added) >= 5
        assert all(original_chunk and 0 < n <= BLOCK for original_chunk, n in added)
        assert all(n == BLOCK for _, n in added[:-1])


@pytest.mark.parametrize("compression", ["uncompressed", "zlib", "zstd"])
def test_add_user_metadata_keeps_existing_and_appends_again(tmp_path: Path,
                                                            compression: str) -> None:
    """A file the C++ writer already gave user metadata keeps it; adding twice appends."""
    kind = {"uncompressed": pyorc.CompressionKind.NONE, "zlib": pyorc.CompressionKind.ZLIB,
            "zstd": pyorc.CompressionKind.ZSTD}[compression]
    buffer = io.BytesIO()
    with pyorc.Writer(buffer, "struct<a:bigint,b:string>", compression=kind) as writer:
        writer.set_user_metadata(existing=b"from the writer")
        for i in range(100):
            writer.write((i, str(i)))
    first = add_user_metadata(buffer.getvalue(), {"one": b"1"})
    second = add_user_metadata(first, {"two": b"2" * 10_000})
    arrow_meta, arrow_table, orc_meta, orc_rows = read_back(second)
    expected = {"existing": b"from the writer", "one": b"1", "two": b"2" * 10_000}
    assert arrow_meta == expected
    assert orc_meta == expected
    assert orc_rows == [(i, str(i)) for i in range(100)]
    assert arrow_table.column("a").to_pylist() == list(range(100))


def test_add_user_metadata_nothing_to_add() -> None:
    original = orc_bytes(sample_table(3), "zstd")
    assert add_user_metadata(original, {}) == original


@pytest.mark.parametrize("data", [b"", b"ORC", b"not an orc file at all",
                                  b"ORC" + b"\xff" * 40 + b"\x05"])
def test_add_user_metadata_refuses_non_orc(data: bytes) -> None:
    with pytest.raises(CorruptFileError) as info:
        add_user_metadata(data, {"k": b"v"}, path="/x/bucket_00000")
    assert "/x/bucket_00000" in str(info.value)


def test_delete_cache_decodes_each_file_once(tmp_path: Path) -> None:
    """Splits of one scan share decoded delete files; only fully read files are kept."""
    from acidfiles import bucket_property, delete_events, write_dir

    from acidstore.format.writeids import ValidWriteIdList
    from acidstore.read.registry import DeleteCache
    from acidstore.read.splits import DeleteSource

    prop = bucket_property(0)
    write_dir(tmp_path, "delete_delta_0000002_0000002_0000",
              {0: delete_events([(1, prop, r) for r in range(5)], 2)})
    path = str(tmp_path / "delete_delta_0000002_0000002_0000" / "bucket_00000")
    source = DeleteSource(path, 2, 2, 0, 0)
    fs = pafs.LocalFileSystem()
    snapshot = ValidWriteIdList.all_valid()

    cache = DeleteCache()
    first = [k.row_id.tolist() for k in cache.events(fs, source, snapshot)]
    Path(path).rename(path + ".moved")  # the cache must not need the file any more
    assert [k.row_id.tolist() for k in cache.events(fs, source, snapshot)] == first == [
        [0, 1, 2, 3, 4]]

    Path(path + ".moved").rename(path)
    partial = DeleteCache()
    next(iter(partial.events(fs, source, snapshot)))  # read, but never finished
    Path(path).unlink()
    with pytest.raises(MissingDataError):
        list(partial.events(fs, source, snapshot))

    write_dir(tmp_path, "delete_delta_0000002_0000002_0000",
              {0: delete_events([(1, prop, r) for r in range(5)], 2)})
    small = DeleteCache(max_events=4)  # 5 events exceed its budget: read, but not kept
    assert sum(len(k) for k in small.events(fs, source, snapshot)) == 5
    Path(path).unlink()
    with pytest.raises(MissingDataError):
        list(small.events(fs, source, snapshot))


def test_splits_of_a_bucket_share_one_registry(tmp_path: Path) -> None:
    """After many small writes a bucket has many splits consulting the same delete files:
    one registry serves them all, and reads equal the streaming merge's."""
    import acidstore
    from acidstore.read.registry import DeleteCache, load_registry
    from acidstore.read.scan import Scan

    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.int64())]))
        t.insert(pa.table({"id": list(range(50)), "v": [0] * 50}))
        for i in range(8):
            t.update(f"id = {i} OR id = {20 + i}", {"v": "v + 1"})
            t.delete(f"id = {40 + i}")
        txns, write_ids = handle_of(t).read_snapshot()
        scan = handle_of(t).scan_at(txns, write_ids, with_row_id=True)
        splits = [split for _, split in scan.planned if split.deletes]
        assert len(splits) > 8
        cache = DeleteCache()
        shared = [load_registry(wh.filesystem, s, write_ids, cache=cache) for s in splits]
        # built once per superset met in scan order, not once per split
        assert len({id(r) for r in shared}) <= 2 < len(splits)
        own = [load_registry(wh.filesystem, s, write_ids) for s in splits]  # per split
        for split, a, b in zip(splits, shared, own, strict=True):
            assert a is not None and b is not None
            keys = KeyArrays(np.full(60, split.min_write_id, np.int64),
                             np.full(60, 536870912, np.int32), np.arange(60, dtype=np.int64))
            assert (a.deleted(keys) == b.deleted(keys)).all()
        vectorized = t.to_arrow(with_row_id=True).sort_by("id")
        merged = Scan(wh.filesystem, [], write_ids, txns, schema=handle_of(t).info.schema,
                      partition_schema=handle_of(t).info.partition_schema, with_row_id=True,
                      planned=scan.planned, delete_event_limit=0).to_table().sort_by("id")
        assert vectorized.equals(merged)
        assert vectorized.num_rows == 42


@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 2), st.integers(0, 50)),
                max_size=20), st.integers(0, 14), st.integers(0, 14))
def test_touches_says_whether_an_event_names_a_write_id_in_range(
        deletes: list[tuple[int, int, int]], low: int, high: int) -> None:
    """A split whose write ids no event names skips decoding its ROW__IDs."""
    registry = DeleteRegistry(arrays(deletes))
    assert registry.touches(low, high) == any(low <= w <= high for w, _, _ in deletes)
