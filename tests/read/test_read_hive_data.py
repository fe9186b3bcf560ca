"""Reading data laid out the way Hive itself writes it (spec sections 3, 4, 9, 15, 17).

Files here are written with pyorc (the ORC C++ library, the same format Hive's Java writer
produces): row structs with fields named ``_col0.._colN`` mapped by position, files without
``hive.acid.*`` metadata, any-case ACID field names, streaming deltas read up to the logical
length of their ``_flush_length`` side file, original and LOAD DATA files with synthetic
ROW__IDs, compacted and INSERT OVERWRITE bases, partitioned tables with escaped values, and the
spec's section 17 timeline. Every expectation is an exact row list with exact ROW__IDs, read
with both readers.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from acidfiles import (
    ACID_FIELD_NAMES,
    SCHEMA,
    Event,
    Row,
    bucket_property,
    delete_events,
    events_table,
    insert_events,
    read,
    rid,
    row,
    write_dir,
    write_original,
    write_pyorc_events,
    write_pyorc_rows,
)

import acidstore
from acidstore.errors import CorruptFileError, DataError, NotEnoughHistoryError
from acidstore.format.directory import acid_state
from acidstore.format.layout import ACID_VERSION_FILE, METADATA_FILE
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.schema import DELETE, INSERT, acid_field_names, event_schema

LONG_MAX = 2**63 - 1
B0 = 536870912  # V1(bucket 0, statement 0) = 0x20000000
B1 = 536936448  # V1(1, 0) = 0x20010000


def with_rid(r: Row, write_id: int, bucket: int, row_id: int) -> Row:
    return {**r, "row__id": rid(write_id, bucket, row_id)}


def by_rid(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (r["row__id"]["writeid"], r["row__id"]["bucketid"],
                                       r["row__id"]["rowid"]))


def marker(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ACID_VERSION_FILE).write_text("2")


def inserts(write_id: int, bucket: int, rows: list[Row], *, first: int = 0) -> list[Event]:
    return [(INSERT, write_id, bucket, first + i, write_id, r) for i, r in enumerate(rows)]


def deletes(keys: list[tuple[int, int, int]], current: int) -> list[Event]:
    return [(DELETE, w, b, r, current, None) for w, b, r in sorted(keys)]


# --- Hive-written event files --------------------------------------------------------------------


def test_hive_col_names_mapped_by_position(tmp_path: Path) -> None:
    """Hive names the row struct's fields _col0.._colN; ``schema=`` maps them by position."""
    root = tmp_path / "t"
    marker(root / "delta_0000001_0000001_0000")
    write_pyorc_events(root / "delta_0000001_0000001_0000" / "bucket_00000",
                       inserts(1, B0, [row(1, "a", 1.5), row(2, None, None), row(3, "c", -2.0)]))
    marker(root / "delete_delta_0000002_0000002_0000")
    write_pyorc_events(root / "delete_delta_0000002_0000002_0000" / "bucket_00000",
                       deletes([(1, B0, 1)], 2))

    assert read(root, schema=SCHEMA, with_row_id=True) == [
        with_rid(row(1, "a", 1.5), 1, B0, 0), with_rid(row(3, "c", -2.0), 1, B0, 2)]
    # without a schema the file's own names come through
    assert read(root) == [{"_col0": 1, "_col1": "a", "_col2": 1.5},
                          {"_col0": 3, "_col1": "c", "_col2": -2.0}]
    # projection and filter use the table's names, not the file's
    assert read(root, schema=SCHEMA, columns=["amount", "id"], filter="name = 'c'") == [
        {"amount": -2.0, "id": 3}]
    # a schema with other types casts (Hive's int column read as bigint here and back)
    narrow = pa.schema([("id", pa.int32()), ("name", pa.string()), ("amount", pa.float32())])
    assert read(root, schema=narrow, columns=["id"]) == [{"id": 1}, {"id": 3}]


def test_table_schema_wider_than_old_files(tmp_path: Path) -> None:
    """A column added after a file was written (ALTER TABLE ADD COLUMNS) reads as NULL."""
    root = tmp_path / "t"
    marker(root / "delta_0000001_0000001_0000")
    write_pyorc_events(root / "delta_0000001_0000001_0000" / "bucket_00000",
                       inserts(1, B0, [row(1, "a", 1.0)]))
    wider = SCHEMA.append(pa.field("extra", pa.string()))
    assert read(root, schema=wider) == [{**row(1, "a", 1.0), "extra": None}]


def test_files_without_acid_metadata(tmp_path: Path) -> None:
    """Files written without hive.acid.* metadata (no key index) read the same: the delete
    events are not bounded by any key range."""
    root = tmp_path / "t"
    marker(root / "delta_0000001_0000001_0000")
    path = root / "delta_0000001_0000001_0000" / "bucket_00000"
    write_pyorc_events(path, inserts(1, B0, [row(i) for i in range(5)]), acid_metadata=False,
                       flush_after=[2])
    marker(root / "delete_delta_0000002_0000002_0000")
    dpath = root / "delete_delta_0000002_0000002_0000" / "bucket_00000"
    write_pyorc_events(dpath, deletes([(1, B0, 0), (1, B0, 4)], 2), acid_metadata=False)

    orc = OrcFile(pafs.LocalFileSystem(), str(path))
    assert orc.user_metadata == {}
    assert orc.key_index is None
    assert orc.nstripes == 2
    assert [r["row__id"]["rowid"] for r in read(root, with_row_id=True)] == [1, 2, 3]
    assert read(root, delete_event_limit=0, columns=["_col0"]) == [
        {"_col0": 1}, {"_col0": 2}, {"_col0": 3}]


@pytest.mark.parametrize("case", ["upper", "lower", "mixed"])
def test_acid_field_names_any_case(tmp_path: Path, case: str) -> None:
    """Hive recognises the event schema by name, case-insensitively; other engines write the
    top-level names in lower case."""
    names = {"upper": [n.upper() for n in ACID_FIELD_NAMES],
             "lower": [n.lower() for n in ACID_FIELD_NAMES],
             "mixed": ["Operation", "ORIGINALtransaction", "Bucket", "ROWID",
                       "currenttransaction", "Row"]}[case]
    root = tmp_path / "t"
    marker(root / "delta_0000001_0000001_0000")
    write_pyorc_events(root / "delta_0000001_0000001_0000" / "bucket_00000",
                       inserts(1, B0, [row(1, "x"), row(2, "y")]), names=names)
    marker(root / "delete_delta_0000002_0000002_0000")
    write_pyorc_events(root / "delete_delta_0000002_0000002_0000" / "bucket_00000",
                       deletes([(1, B0, 0)], 2), names=names)
    assert read(root, schema=SCHEMA, with_row_id=True) == [with_rid(row(2, "y"), 1, B0, 1)]
    assert read(root, schema=SCHEMA, with_row_id=True, write_ids="t:1:9223372036854775807::"
                ) == [with_rid(row(1, "x"), 1, B0, 0), with_rid(row(2, "y"), 1, B0, 1)]


def test_acid_field_names_refuses_event_names_with_other_types() -> None:
    """Event names decide "ACID or original"; with the names, wrong types are a corrupt file
    (named in the error), never an original one."""
    schema = event_schema(SCHEMA)
    assert acid_field_names(schema) == {n: n for n in ACID_FIELD_NAMES}
    assert acid_field_names(pa.schema(list(schema)[:5])) is None
    renamed = schema.set(2, pa.field("bucketx", pa.int32()))
    assert acid_field_names(renamed) is None
    with pytest.raises(DataError, match="'rowId' has type int32, expected int64"):
        acid_field_names(schema.set(3, pa.field("rowId", pa.int32())))
    with pytest.raises(DataError, match="'ROW' is int64, not a struct"):
        acid_field_names(schema.set(5, pa.field("ROW", pa.int64())))

# --- streaming ingest: multi-txn deltas and side files (spec 15) -------------------------------


def streaming_events() -> list[Event]:
    """A batch of three streaming txns (write ids 5, 6, 7) into bucket 0: rowIds restart at 0
    for every write id."""
    return (inserts(5, B0, [row(50), row(51)]) + inserts(6, B0, [row(60)])
            + inserts(7, B0, [row(70), row(71), row(72)]))


def test_streaming_delta_rows_filtered_per_write_id(tmp_path: Path) -> None:
    root = tmp_path / "t"
    marker(root / "delta_0000005_0000007")
    write_pyorc_events(root / "delta_0000005_0000007" / "bucket_00000", streaming_events(),
                       flush_after=[2, 3])
    everything = read(root, schema=SCHEMA, columns=["id"], with_row_id=True)
    assert everything == [
        {"id": 50, "row__id": rid(5, B0, 0)}, {"id": 51, "row__id": rid(5, B0, 1)},
        {"id": 60, "row__id": rid(6, B0, 0)}, {"id": 70, "row__id": rid(7, B0, 0)},
        {"id": 71, "row__id": rid(7, B0, 1)}, {"id": 72, "row__id": rid(7, B0, 2)}]
    # txn of write id 6 aborted: its rows stay in the file and are filtered by write id
    assert [r["id"] for r in read(root, schema=SCHEMA, columns=["id"],
                                  write_ids="default.t:7:9223372036854775807::6")] == [
        50, 51, 70, 71, 72]
    # write id 5 still open, 7 above the watermark
    assert [r["id"] for r in read(root, schema=SCHEMA, columns=["id"],
                                  write_ids="default.t:6:5:5:")] == [60]
    # all three invalid: the delta is not even selected
    assert read(root, schema=SCHEMA, write_ids="default.t:7:5:5,7:6") == []


def test_flush_length_side_file_cuts_off_trailing_bytes(tmp_path: Path) -> None:
    """The last complete 8-byte big-endian long of ``bucket_N_flush_length`` is the file's
    logical length; bytes beyond it (a flush in progress) are ignored, as is a partial long."""
    root = tmp_path / "t"
    directory = root / "delta_0000005_0000007"
    marker(directory)
    path = directory / "bucket_00000"
    events = streaming_events()
    length = write_pyorc_events(path, events)[-1]
    with path.open("ab") as out:
        out.write(b"\x00garbage of an unfinished stripe" * 3)
    side = directory / "bucket_00000_flush_length"
    side.write_bytes((0).to_bytes(8, "big") + length.to_bytes(8, "big") + b"\x00\x00\x05")

    got = read(root, schema=SCHEMA, columns=["id"], with_row_id=True)
    assert [r["id"] for r in got] == [50, 51, 60, 70, 71, 72]
    assert got[3]["row__id"] == rid(7, B0, 0)
    splits = acidstore.scan_directory(root, SCHEMA).splits
    assert [(s.logical_length, s.min_write_id, s.max_write_id) for s in splits] == [
        (length, 5, 7)]

    # the garbage is really there: without the side file the file does not decode
    side.unlink()
    with pytest.raises(CorruptFileError) as info:
        read(root, schema=SCHEMA)
    assert str(path) in str(info.value)


def test_flush_length_reads_up_to_an_intermediate_footer(tmp_path: Path) -> None:
    """What a live streaming file looks like: each commit wrote an intermediate footer and
    appended its length to the side file; only committed flushes are read."""
    root = tmp_path / "t"
    directory = root / "delta_0000005_0000007"
    marker(directory)
    path = directory / "bucket_00000"
    first, second, full = write_pyorc_events(path, streaming_events(), flush_after=[2, 3])
    assert first < second < full
    side = directory / "bucket_00000_flush_length"

    def ids(lengths: list[int], tail: bytes = b"") -> list[int]:
        side.write_bytes(b"".join(n.to_bytes(8, "big") for n in lengths) + tail)
        return [r["id"] for r in read(root, schema=SCHEMA, columns=["id"])]

    assert ids([0]) == []  # the side file starts with one long 0: nothing flushed yet
    assert ids([0, first]) == [50, 51]
    assert ids([0, first, second], b"\x01") == [50, 51, 60]
    assert ids([0, first, second, full]) == [50, 51, 60, 70, 71, 72]
    side.unlink()  # writer closed: the real length applies
    assert [r["id"] for r in read(root, schema=SCHEMA, columns=["id"])] == [
        50, 51, 60, 70, 71, 72]


@pytest.mark.parametrize("content", [b"", b"\x00\x00\x00\x00\x00\x01\x02"])
def test_unreadable_side_file(tmp_path: Path, content: bytes) -> None:
    """A side file with no complete long: Hive says "... found but is not readable.  Consider
    waiting or orcfiledump --recover"."""
    root = tmp_path / "t"
    directory = root / "delta_0000005_0000007"
    marker(directory)
    write_pyorc_events(directory / "bucket_00000", streaming_events())
    side = directory / "bucket_00000_flush_length"
    side.write_bytes(content)
    with pytest.raises(CorruptFileError) as info:
        acidstore.read_directory(root, SCHEMA)
    assert "Consider waiting or orcfiledump --recover" in str(info.value)
    assert str(side) in str(info.value)


def test_side_file_only_for_streaming_deltas(tmp_path: Path) -> None:
    """``mayContainSideFile``: a side file beside a delta_x_x or a compacted delta_x_y_vT is
    ignored (they are never written by a streaming writer)."""
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000", {0: insert_events(1, 0, [row(1), row(2)])})
    write_dir(root, "delta_0000002_0000003_v0000010",
              {0: insert_events(2, 0, [row(3)])})
    for name in ("delta_0000001_0000001_0000", "delta_0000002_0000003_v0000010"):
        (root / name / "bucket_00000_flush_length").write_bytes(b"\x00" * 3)
    assert [r["id"] for r in read(root, columns=["id"])] == [1, 2, 3]


# --- original files and LOAD DATA (spec 9) -------------------------------------------------------


def test_original_files_synthetic_row_ids(tmp_path: Path) -> None:
    """Pre-ACID files: writeId 0, bucket property V1(bucket from the name, 0), rowIds running
    across ``000000_0``, ``000000_0_copy_1``, ... in path order; deletes can target them."""
    root = tmp_path / "t"
    hive_type = "struct<_col0:bigint,_col1:string,_col2:double>"
    write_pyorc_rows(root / "000000_0", [(1, "a", 1.0), (2, "b", 2.0)], hive_type)
    write_pyorc_rows(root / "000000_0_copy_1", [(3, "c", 3.0)], hive_type)
    write_pyorc_rows(root / "000000_0_copy_2", [(4, "d", 4.0), (5, "e", 5.0)], hive_type)
    write_pyorc_rows(root / "000001_0", [(10, "x", None)], hive_type)
    write_pyorc_rows(root / "000001_0_copy_1", [], hive_type)  # empty copy: no rows, no ids
    write_pyorc_rows(root / "000001_0_copy_2", [(11, "y", None)], hive_type)
    (root / "_SUCCESS").write_bytes(b"")  # hidden: not an original file
    (root / ".000000_0.crc").write_bytes(b"junk")

    expected = [
        with_rid(row(1, "a", 1.0), 0, B0, 0), with_rid(row(2, "b", 2.0), 0, B0, 1),
        with_rid(row(3, "c", 3.0), 0, B0, 2), with_rid(row(4, "d", 4.0), 0, B0, 3),
        with_rid(row(5, "e", 5.0), 0, B0, 4),
        with_rid(row(10, "x"), 0, B1, 0), with_rid(row(11, "y"), 0, B1, 1),
    ]
    assert read(root, schema=SCHEMA, with_row_id=True) == expected

    # write 1 deletes (0,B0,2) and (0,B1,1): routed to the bucket of the row
    write_dir(root, "delete_delta_0000001_0000001_0000",
              {0: delete_events([(0, B0, 2)], 1), 1: delete_events([(0, B1, 1)], 1)})
    # write 2 updates (0,B0,4): delete + new insert with a fresh ROW__ID
    write_dir(root, "delete_delta_0000002_0000002_0000", {0: delete_events([(0, B0, 4)], 2)})
    write_dir(root, "delta_0000002_0000002_0000", {0: insert_events(2, 0, [row(5, "E", 50.0)])})
    got = read(root, schema=SCHEMA, with_row_id=True)
    assert by_rid(got) == [
        expected[0], expected[1], expected[3], expected[5],
        with_rid(row(5, "E", 50.0), 2, B0, 0)]
    # as of write 1 (write 2 still open) the original row 5 is still there
    assert by_rid(read(root, schema=SCHEMA, with_row_id=True,
                       write_ids="default.t:2:2:2:")) == [
        expected[0], expected[1], expected[3], expected[4], expected[5]]


def test_original_files_in_subdirectories(tmp_path: Path) -> None:
    """Files of non-ACID subdirectories (e.g. from a UNION ALL insert) are originals too, in
    path order, with the bucket taken from their own names."""
    root = tmp_path / "t"
    write_original(root / "000000_0", [row(1)])
    write_original(root / "HIVE_UNION_SUBDIR_1" / "000000_0", [row(2), row(3)])
    write_original(root / "HIVE_UNION_SUBDIR_2" / "000000_0", [row(4)])
    got = read(root, schema=SCHEMA, columns=["id"], with_row_id=True)
    assert sorted((r["row__id"]["rowid"], r["id"]) for r in got) == [
        (0, 1), (1, 2), (2, 3), (3, 4)]
    assert {(r["row__id"]["writeid"], r["row__id"]["bucketid"]) for r in got} == {(0, B0)}


def test_load_data_raw_files_in_deltas_and_base(tmp_path: Path) -> None:
    """LOAD DATA puts plain files inside ``delta_x_x[_s]`` (and an overwrite in ``base_x``):
    synthetic writeId x, statement id from the directory name; visible iff x is valid."""
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000", {0: insert_events(1, 0, [row(1)])})
    marker(root / "delta_0000002_0000002_0000")
    write_original(root / "delta_0000002_0000002_0000" / "000000_0", [row(20), row(21)])
    write_original(root / "delta_0000002_0000002_0000" / "000000_0_copy_1", [row(22)])
    marker(root / "delta_0000003_0000003_0001")
    write_original(root / "delta_0000003_0000003_0001" / "000001_0", [row(30)])
    # write 4 deletes the second LOAD DATA row of write 2
    write_dir(root, "delete_delta_0000004_0000004_0000", {0: delete_events([(2, B0, 1)], 4)})
    b1s1 = bucket_property(1, 1)
    assert b1s1 == 536936449

    got = read(root, schema=SCHEMA, columns=["id"], with_row_id=True)
    assert got == [
        {"id": 1, "row__id": rid(1, B0, 0)},
        {"id": 20, "row__id": rid(2, B0, 0)},
        {"id": 22, "row__id": rid(2, B0, 2)},
        {"id": 30, "row__id": rid(3, b1s1, 0)},
    ]
    # write 3 aborted, write 4 open: the deleted row is back, the load of 3 gone
    assert [r["id"] for r in read(root, schema=SCHEMA, columns=["id"],
                                  write_ids="default.t:4:4:4:3")] == [1, 20, 21, 22]

    # LOAD DATA OVERWRITE: a raw base_5 replaces everything before it
    marker(root / "base_0000005")
    write_original(root / "base_0000005" / "000000_0", [row(50), row(51)])
    assert read(root, schema=SCHEMA, columns=["id"], with_row_id=True) == [
        {"id": 50, "row__id": rid(5, B0, 0)}, {"id": 51, "row__id": rid(5, B0, 1)}]


# --- bases (spec 7.2) ---------------------------------------------------------------------


COMPACTED = '{"thisFileVersion":"0","dataFormat":"compacted"}'


def test_compacted_base_with_visibility_and_metadata(tmp_path: Path) -> None:
    """A Hive 4 major compaction output ``base_N_vT`` (with ``_metadata_acid``) keeps the
    surviving rows' ROW__IDs; it counts once its txn T has committed."""
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000",
              {0: insert_events(1, 0, [row(1), row(2), row(3)])})
    write_dir(root, "delete_delta_0000002_0000002_0000", {0: delete_events([(1, B0, 1)], 2)})
    base = "base_0000002_v0000012"
    write_dir(root, base, {0: events_table([(INSERT, 1, B0, 0, 1, row(1)),
                                            (INSERT, 1, B0, 2, 1, row(3))])})
    (root / base / METADATA_FILE).write_text(COMPACTED)
    expected = [with_rid(row(1), 1, B0, 0), with_rid(row(3), 1, B0, 2)]

    assert acid_state(root, None, f"20:{LONG_MAX}::").base == base
    assert read(root, schema=SCHEMA, with_row_id=True, txns=f"20:{LONG_MAX}::") == expected
    assert acidstore.scan_directory(root, SCHEMA).splits[0].path.endswith(
        f"{base}/bucket_00000")
    # compaction txn 12 still open: the deltas are read, same rows
    assert acid_state(root, None, "20:12:12:").base is None
    assert read(root, schema=SCHEMA, with_row_id=True, txns="20:12:12:") == expected
    # compaction txn 12 aborted: the same
    assert read(root, schema=SCHEMA, with_row_id=True, txns=f"20:{LONG_MAX}::12") == expected


def test_pre_hive4_compacted_base_vs_insert_overwrite_base(tmp_path: Path) -> None:
    """``base_N`` with ``_metadata_acid`` ``compacted`` erased history; without it the base is
    an INSERT OVERWRITE of write N, usable whenever N is valid, even with an older write
    still open."""
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000", {0: insert_events(1, 0, [row(1)])})
    write_dir(root, "base_0000003", {0: insert_events(3, 0, [row(30), row(31)])})
    write_dir(root, "delta_0000004_0000004_0000", {0: insert_events(4, 0, [row(40)])})
    write_dir(root, "delete_delta_0000004_0000004_0000", {0: delete_events([(3, B0, 0)], 4)})
    open_two = "default.t:4:2:2:"
    assert [r["id"] for r in read(root, schema=SCHEMA, columns=["id"],
                                  write_ids=open_two)] == [31, 40]
    assert [r["id"] for r in read(root, schema=SCHEMA, columns=["id"])] == [31, 40]
    (root / "base_0000003" / METADATA_FILE).write_text(COMPACTED)
    assert [r["id"] for r in read(root, schema=SCHEMA, columns=["id"])] == [31, 40]
    # now write 2 being open makes the base unusable, and there is no older base to fall back on
    with pytest.raises(NotEnoughHistoryError):
        read(root, schema=SCHEMA, write_ids=open_two)


# --- partitioned tables ----------------------------------------------------------------------


def test_partitioned_table_with_escaped_values(tmp_path: Path) -> None:
    """``col=value`` directories (Hive-escaped, ``%2F`` for '/', NULL as
    ``__HIVE_DEFAULT_PARTITION__``) become string partition columns after the user columns."""
    root = tmp_path / "t"
    parts = {
        "dt=2024-01-01/country=US": [row(1), row(2)],
        "dt=2024%2F01%2F02/country=a%3Ab": [row(3)],
        "dt=__HIVE_DEFAULT_PARTITION__/country=US": [row(4)],
    }
    for path, rows in parts.items():
        write_dir(root / path, "delta_0000001_0000001_0000", {0: insert_events(1, 0, rows)})
    write_dir(root / "dt=2024-01-01/country=US", "delete_delta_0000002_0000002_0000",
              {0: delete_events([(1, B0, 0)], 2)})
    (root / "_tmp.staging").mkdir()

    got = read(root, schema=SCHEMA, columns=["id", "dt", "country"], with_row_id=True)
    assert sorted((r["dt"] or "", r["country"], r["id"], r["row__id"]["rowid"]) for r in got
                  ) == [("", "US", 4, 0), ("2024-01-01", "US", 2, 1), ("2024/01/02", "a:b", 3, 0)]
    full = acidstore.read_directory(root, SCHEMA)
    assert full.column_names == ["id", "name", "amount", "dt", "country"]
    assert full.schema.field("dt").type == pa.string()

    # a predicate on partition columns only prunes whole partitions before any file is read
    scan = acidstore.scan_directory(root, SCHEMA, filter="dt = '2024/01/02'")
    assert [Path(s.path).parts[-4:-2] for s in scan.splits] == [
        ("dt=2024%2F01%2F02", "country=a%3Ab")]
    assert scan.to_table().to_pylist() == [{**row(3), "dt": "2024/01/02", "country": "a:b"}]
    assert [r["id"] for r in read(root, schema=SCHEMA, columns=["id"], filter="dt IS NULL")
            ] == [4]
    # snapshot applies to every partition: write 2 aborted brings row 1 back
    assert sorted(r["id"] for r in read(root, schema=SCHEMA, columns=["id"],
                                        write_ids="default.t:2:9223372036854775807::2")) == [
        1, 2, 3, 4]


# --- the spec's section 17 timeline, on disk ---------------------------------------------------


def test_spec_17_timeline(tmp_path: Path) -> None:
    root = tmp_path / "t"
    r1, r2 = row(1, "a", 10.0), row(2, "b", 20.0)
    r1u = row(1, "a", 11.0)

    # 1. write 1 inserts two rows
    write_dir(root, "delta_0000001_0000001_0000", {0: events_table(inserts(1, B0, [r1, r2]))})
    assert read(root, with_row_id=True) == [with_rid(r1, 1, B0, 0), with_rid(r2, 1, B0, 1)]

    # 2. write 2 updates (1,b,0): a delete event and a new insert (statement 0)
    write_dir(root, "delete_delta_0000002_0000002_0000",
              {0: events_table([(DELETE, 1, B0, 0, 2, None)])})
    write_dir(root, "delta_0000002_0000002_0000", {0: events_table(inserts(2, B0, [r1u]))})
    assert read(root, with_row_id=True) == [with_rid(r2, 1, B0, 1), with_rid(r1u, 2, B0, 0)]

    # 3. write 3 deletes (1,b,1)
    write_dir(root, "delete_delta_0000003_0000003_0000",
              {0: events_table([(DELETE, 1, B0, 1, 3, None)])})
    state = acid_state(root, "default.t:3:9223372036854775807::")
    assert state.base is None
    assert state.deltas == [
        "delta_0000001_0000001_0000",
        "delete_delta_0000002_0000002_0000", "delta_0000002_0000002_0000",
        "delete_delta_0000003_0000003_0000"]
    final = [with_rid(r1u, 2, B0, 0)]
    assert read(root, with_row_id=True, write_ids="default.t:3:9223372036854775807::") == final
    history = {1: [with_rid(r1, 1, B0, 0), with_rid(r2, 1, B0, 1)],
               2: [with_rid(r2, 1, B0, 1), with_rid(r1u, 2, B0, 0)], 3: final}

    # 4. minor compaction in txn 10: ROW__IDs and currentTransactions unchanged
    write_dir(root, "delta_0000001_0000003_v0000010",
              {0: events_table(inserts(1, B0, [r1, r2]) + inserts(2, B0, [r1u]))})
    write_dir(root, "delete_delta_0000001_0000003_v0000010",
              {0: events_table([(DELETE, 1, B0, 0, 2, None), (DELETE, 1, B0, 1, 3, None)])})
    committed_10 = f"11:{LONG_MAX}::"
    state = acid_state(root, "default.t:3:9223372036854775807::", committed_10)
    assert state.deltas == ["delete_delta_0000001_0000003_v0000010",
                            "delta_0000001_0000003_v0000010"]
    # (spec 17 speaks of "the five originals"; steps 1-3 wrote four directories)
    assert state.obsolete == ["delete_delta_0000002_0000002_0000",
                              "delete_delta_0000003_0000003_0000",
                              "delta_0000001_0000001_0000", "delta_0000002_0000002_0000"]
    assert read(root, with_row_id=True, txns=committed_10) == final
    assert acid_state(root, None, "11:10:10:").deltas[0] == "delta_0000001_0000001_0000"
    assert read(root, with_row_id=True, txns="11:10:10:") == final
    for hwm, rows in history.items():  # time travel still works over the minor compaction
        assert by_rid(read(root, with_row_id=True, txns=committed_10,
                           write_ids=f"default.t:{hwm}:9223372036854775807::")) == rows

    # 5. major compaction in txn 12: the base alone, with the surviving row's ROW__ID
    write_dir(root, "base_0000003_v0000012", {0: events_table(inserts(2, B0, [r1u]))})
    committed_12 = f"13:{LONG_MAX}::"
    state = acid_state(root, None, committed_12)
    assert (state.base, state.deltas) == ("base_0000003_v0000012", [])
    assert read(root, with_row_id=True, txns=committed_12) == final
    assert [s.path.rsplit("/", 2)[-2] for s in
            acidstore.scan_directory(root, txns=committed_12).splits] == [
        "base_0000003_v0000012"]
    # compaction txn 12 not committed yet: the minor-compacted deltas are used
    assert acid_state(root, None, "13:12:12:").base is None
    assert read(root, with_row_id=True, txns="13:12:12:") == final
