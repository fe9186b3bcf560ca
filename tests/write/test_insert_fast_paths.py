"""The bulk insert's fast paths against their plain forms: bucket files encoded on several
threads are the bytes one thread writes; the grouping of rows by bucket (Arrow's stable sort,
bounds from a count) is the plain per-bucket selection; a one-stripe file's stripe row count
read from its footer is the count a decode finds; rows gathered chunk by chunk from a chunked
input are pyarrow's ``take`` of it, and write the bytes a one-chunk input writes; hashing in
slices of ``HASH_CHUNK_ROWS`` rows is hashing the whole column at once; an event file whose
tail is written beside pyarrow's buffer is the file with the metadata added to the joined
bytes; a bucket streamed into its file slice by slice is the bytes of one encoded whole; the
timestamp check's min/max shortcut decides as the check of every value."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.orc as po
import pytest

from acidstore.errors import SchemaMismatchError
from acidstore.format.orc.acid_metadata import AcidStats, acid_metadata
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.file_writer import (
    ORC_BATCH_ROWS,
    _stripe_row_counts,
    operation_counts,
    write_event_file,
)
from acidstore.format.orc.footer import add_user_metadata
from acidstore.format.orc.schema import OPERATION
from acidstore.write import bucketing, files, timestamps
from acidstore.write.bucketing import bucket_ids
from acidstore.write.files import ChunkedRows, _groups, insert_events, write_inserts
from acidstore.write.timestamps import check_timestamps

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("v", pa.float64())])


def _rows(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    strings = [None if i % 13 == 0 else f"s{rng.integers(0, 10**6)}" for i in range(n)]
    return pa.table({"id": np.arange(n, dtype=np.int64) * 7919 % 100_003,
                     "s": pa.array(strings, pa.string()),
                     "v": rng.random(n)}, schema=SCHEMA)


def _user_rows(orc: OrcFile) -> pa.Table:
    row = orc.read(["row"]).column("row").combine_chunks()
    return pa.Table.from_struct_array(row).cast(SCHEMA)


@pytest.mark.parametrize("kind", ["delta", "base"])
def test_threaded_bucket_files_are_the_bytes_one_thread_writes(tmp_path: Path,
                                                                kind: str) -> None:
    fs = pafs.LocalFileSystem()
    rows = _rows(20_000)
    buckets = bucket_ids(rows, ["id"], 8)
    written = {}
    for threads in (1, 3):
        root = tmp_path / f"t{threads}"
        out = write_inserts(fs, str(root), "", rows, buckets, write_id=3, statement_id=2,
                            schema=SCHEMA, kind=kind,  # type: ignore[arg-type]
                            threads=threads, stripe_size=64 << 10)
        assert out is not None and out.rows == rows.num_rows
        written[threads] = {Path(f.path).name: (Path(f.path).read_bytes(), f.rows, f.last_key)
                            for f in out.files}
    assert len(written[1]) == 8
    assert written[1] == written[3]
    # and what was written is each bucket's rows, in input order
    for name, (_, count, _) in written[1].items():
        bucket = int(name.split("_")[1])
        expected = rows.filter(pa.array(buckets == bucket))
        got = OrcFile(fs, str(tmp_path / "t1" / ("base_0000003" if kind == "base" else
                                                  "delta_0000003_0000003_0002") / name))
        assert _user_rows(got).equals(expected)
        assert count == expected.num_rows


def test_one_bucket_of_every_row_is_written_without_a_gather(tmp_path: Path) -> None:
    fs = pafs.LocalFileSystem()
    rows = _rows(1000)
    out = write_inserts(fs, str(tmp_path), "", rows, np.full(1000, 5, np.int32), write_id=1,
                        statement_id=0, schema=SCHEMA)
    assert out is not None and [Path(f.path).name for f in out.files] == ["bucket_00005"]
    assert _user_rows(OrcFile(fs, out.files[0].path)).equals(rows)


@pytest.mark.parametrize(("low", "high"), [(0, 1), (0, 2), (0, 10), (0, 255), (0, 256),
                                           (0, 4096), (0, 65_535), (0, 65_536), (0, 1 << 20),
                                           (-3, 3), (-(1 << 31), (1 << 31) - 1)])
def test_grouping_by_bucket_matches_a_plain_selection(low: int, high: int) -> None:
    rng = np.random.default_rng(high)
    buckets = rng.integers(low, high, 5000).astype(np.int32)
    groups = _groups(buckets)
    expected = {int(b): np.flatnonzero(buckets == b) for b in np.unique(buckets)}
    assert list(groups) == sorted(expected)
    for bucket, index in groups.items():
        assert index.dtype == np.int64
        np.testing.assert_array_equal(index, expected[bucket])


def test_stripe_row_counts_from_the_footer_match_a_decode(tmp_path: Path) -> None:
    rows = _rows(30_000)
    events = insert_events(rows, 1, 536870912, SCHEMA)
    for stripe_size in (64 << 10, 64 << 20):  # many stripes, then one
        sink = pa.BufferOutputStream()
        po.write_table(events, sink, compression="zstd", stripe_size=stripe_size,
                       batch_size=ORC_BATCH_ROWS)
        data = sink.getvalue()
        orc = po.ORCFile(pa.BufferReader(data))
        decoded = [orc.read_stripe(i, columns=[OPERATION]).num_rows
                   for i in range(orc.nstripes)]
        assert _stripe_row_counts(data, events.num_rows) == decoded
        path = tmp_path / f"bucket_{stripe_size}"
        written = write_event_file(pafs.LocalFileSystem(), str(path), events,
                                   stripe_size=stripe_size)
        index = OrcFile(pafs.LocalFileSystem(), str(path)).key_index
        assert index is not None and len(index) == len(decoded)
        assert [k[2] for k in index] == list(np.cumsum(decoded) - 1)
        assert written.last_key == index[-1]
    assert len(decoded) == 1


def _chunked(rows: pa.Table, sizes: list[int]) -> pa.Table:
    """``rows`` as chunks of the given sizes, and its ``s`` column chunked differently."""
    batches, start = [], 0
    for size in sizes:
        part = rows.slice(start, size)
        batches.append(pa.record_batch([c.combine_chunks() for c in part.columns],
                                       schema=rows.schema))
        start += size
    table = pa.Table.from_batches(batches, schema=rows.schema)
    s = rows.column("s").combine_chunks()
    return table.set_column(1, "s", pa.chunked_array([s[:5], s[5:777], s[777:]]))


def test_a_chunk_by_chunk_gather_is_the_plain_take() -> None:
    rows = _rows(3000)
    chunked = _chunked(rows, [1000, 1, 0, 1499, 500])
    gather = ChunkedRows(chunked)
    rng = np.random.default_rng(3)
    for index in (np.arange(3000), np.sort(rng.choice(3000, 700, replace=False)),
                  np.array([0, 999, 1000, 1001, 2999]), np.array([1500]),
                  np.zeros(0, np.int64)):
        got = gather.take(index.astype(np.int64))
        assert got.schema == rows.schema
        assert got.combine_chunks().equals(rows.take(pa.array(index, pa.int64()))
                                           .combine_chunks())


def test_a_chunked_input_writes_the_bytes_of_a_one_chunk_input(tmp_path: Path) -> None:
    fs = pafs.LocalFileSystem()
    rows = _rows(20_000)
    buckets = bucket_ids(rows, ["id"], 4)
    written = {}
    for label, data in (("one", rows.combine_chunks()),
                        ("many", _chunked(rows, [4096, 5000, 1, 10_903]))):
        out = write_inserts(fs, str(tmp_path / label), "", data, buckets, write_id=1,
                            statement_id=0, schema=SCHEMA, threads=2, stripe_size=64 << 10)
        assert out is not None
        written[label] = [(Path(f.path).name, Path(f.path).read_bytes()) for f in out.files]
    assert len(written["one"]) == 4
    assert written["one"] == written["many"]


def test_hashing_in_slices_is_hashing_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(5000)
    rng = np.random.default_rng(5)
    rows = rows.append_column("k", pa.array(rng.integers(-50, 50, 5000), pa.int32()))
    rows = _chunked(rows, [1234, 3766])
    monkeypatch.setattr(bucketing, "HASH_CHUNK_ROWS", 1000)  # five slices, one partial
    sliced = bucketing.row_hashes(rows, ["s", "k", "id"])
    whole = bucketing._chunk_hashes(rows, ["s", "k", "id"])
    np.testing.assert_array_equal(sliced, whole)
    monkeypatch.setattr(bucketing, "HASH_CHUNK_ROWS", 1 << 16)
    np.testing.assert_array_equal(bucketing.row_hashes(rows, ["s", "k", "id"]), whole)


def _decoded_stripe_rows(data: pa.Buffer) -> list[int]:
    orc = po.ORCFile(pa.BufferReader(data))
    return [orc.read_stripe(i, columns=[OPERATION]).num_rows for i in range(orc.nstripes)]


@pytest.mark.parametrize("rows", [0, 1, 16, ORC_BATCH_ROWS, ORC_BATCH_ROWS + 1])
def test_stripe_row_counts_of_small_files_match_a_decode(rows: int) -> None:
    """Events of at most one row batch are counted as one stripe without parsing the file:
    held to a decode of the file, with the smallest stripe size (a stripe per batch) and
    the events in chunks of 100 rows (the writer still fills whole batches across them)."""
    events = insert_events(_rows(rows), 1, 536870912, SCHEMA)
    chunked = pa.Table.from_batches(events.to_batches(max_chunksize=100), events.schema) \
        if rows else events
    for table in (events, chunked):
        sink = pa.BufferOutputStream()
        po.write_table(table, sink, compression="uncompressed", stripe_size=1,
                       batch_size=ORC_BATCH_ROWS)
        data = sink.getvalue()
        assert _stripe_row_counts(data, rows) == _decoded_stripe_rows(data)


def test_operation_counts_match_pyarrow_compute() -> None:
    ops = np.random.default_rng(3).integers(0, 3, 1000).astype(np.int32)
    expected = [pc.sum(pc.equal(pa.array(ops), op)).as_py() or 0 for op in (0, 1, 2)]
    assert operation_counts(ops) == expected
    assert operation_counts(np.zeros(0, np.int32)) == [0, 0, 0]


@pytest.mark.parametrize("stripe_size", [64 << 10, 64 << 20])
def test_an_event_file_is_its_encoding_with_the_metadata_added(tmp_path: Path,
                                                               stripe_size: int) -> None:
    events = insert_events(_rows(30_000), 1, 536870912, SCHEMA)
    path = tmp_path / "bucket_00000"
    written = write_event_file(pafs.LocalFileSystem(), str(path), events,
                               stripe_size=stripe_size)
    sink = pa.BufferOutputStream()
    po.write_table(events, sink, compression="zstd", stripe_size=stripe_size,
                       batch_size=ORC_BATCH_ROWS)
    counts = _stripe_row_counts(sink.getvalue(), events.num_rows)
    keys = [(1, 536870912, int(end) - 1) for end in np.cumsum(counts)]
    plain = add_user_metadata(sink.getvalue().to_pybytes(),
                              acid_metadata(keys, AcidStats(30_000, 0, 0)))
    assert path.read_bytes() == plain
    assert written.size == len(plain) and written.last_key == keys[-1]


@pytest.mark.parametrize(("kind", "buckets"), [("delta", 3), ("base", 3), ("delta", 1)])
def test_streamed_bucket_files_are_the_bytes_of_whole_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, buckets: int) -> None:
    fs = pafs.LocalFileSystem()
    rows = _chunked(_rows(50_000), [20_000, 30_000])
    ids = bucket_ids(rows, ["id"], buckets)
    written = {}
    for label, stream_rows in (("whole", 10**9), ("streamed", ORC_BATCH_ROWS)):
        monkeypatch.setattr(files, "STREAM_ROWS", stream_rows)
        out = write_inserts(fs, str(tmp_path / label), "", rows, ids, write_id=4,
                            statement_id=1, schema=SCHEMA, kind=kind,  # type: ignore[arg-type]
                            threads=2, stripe_size=64 << 10)
        assert out is not None
        directory = Path(out.files[0].path).parent
        assert sorted(p.name for p in directory.iterdir()) == sorted(
            ["_orc_acid_version"] + [Path(f.path).name for f in out.files])  # no temporaries
        written[label] = [(Path(f.path).name, f.rows, f.last_key, f.size,
                           Path(f.path).read_bytes()) for f in out.files]
    assert len(written["whole"]) == buckets
    assert all(rows > 2 * ORC_BATCH_ROWS for _, rows, _, _, _ in written["whole"])
    assert written["streamed"] == written["whole"]
    for name, _, last_key, _, _ in written["streamed"]:
        orc = OrcFile(fs, str(directory / name))
        assert orc.nstripes >= 2 and orc.key_index is not None
        assert orc.key_index[-1] == last_key


def _refused(check: Callable[[], None]) -> str | None:
    try:
        check()
    except SchemaMismatchError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_the_timestamp_range_check_decides_as_the_check_of_every_value(unit: str) -> None:
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    limit = (2**63 - 1) // (1_000_000_000 // per_second)
    rng = np.random.default_rng(11)
    edges = [0, 1, limit, limit + 1, -1, -per_second, -limit, -limit - 1, 2 * limit, -2 * limit]
    cases: list[list[int | None]] = [[], [None], [0, None, 5 * per_second], [limit, None, 0]]
    cases += [[int(v) for v in rng.choice(edges, 4)] + [None] for _ in range(60)]
    kind = pa.timestamp(unit)
    seen = set()
    for values in cases:
        if any(v is not None and not -(2**63) < v < 2**63 for v in values):
            continue
        rows = pa.table({"ts": pa.array(values, pa.int64()).cast(kind)})
        plain = _refused(lambda rows=rows: timestamps._check_values(  # type: ignore[misc]
            rows, rows.schema.field("ts"), "w"))
        assert _refused(lambda rows=rows: check_timestamps(rows, "w")) == plain  # type: ignore[misc]
        if timestamps._all_readable(rows.column("ts"), kind):
            assert plain is None
        seen.add(plain is None)
    assert seen == {True, False}
