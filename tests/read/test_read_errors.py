"""Bad input gets a typed error from ``acidstore.errors`` that names what is wrong and where.

Damaged files (truncated, random bytes, corrupt stripes, wrong event types) are
``CorruptFileError``s naming the file; files that decode but break the format's promises (events
in the wrong bucket file, out of ROW__ID order, unknown bucket codec) are ``DataError``s naming
the file; unparsable directory names are ``InvalidLayoutError``s naming the directory; bad
columns and predicates are ``InvalidInputError`` / ``InvalidExpressionError`` whatever the data;
a snapshot older than a compacted base is ``NotEnoughHistoryError``. Zero-length files are
empty, not errors. Every case is checked with both readers.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pytest
from acidfiles import (
    SCHEMA,
    bucket_property,
    delete_events,
    events_table,
    insert_events,
    write_dir,
    write_dir_stripes,
    write_original,
)

import acidstore
from acidstore.errors import (
    AcidStoreError,
    CorruptFileError,
    DataError,
    InvalidExpressionError,
    InvalidInputError,
    InvalidLayoutError,
    NotEnoughHistoryError,
    TableNotFoundError,
)
from acidstore.format.orc.schema import DELETE, INSERT

READERS = ["vectorized", "merge"]
B0, B1 = bucket_property(0), bucket_property(1)
LONG_MAX = 2**63 - 1


def rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"id": i, "name": f"n{i}", "amount": float(i)} for i in range(start, start + n)]


def read(root: Path, reader: str = "vectorized", **kwargs: Any) -> pa.Table:
    return acidstore.read_directory(root, SCHEMA, reader=reader, **kwargs)  # type: ignore[arg-type]


E = TypeVar("E", bound=AcidStoreError)


def raises(error: type[E], call: Callable[[], object], *fragments: str) -> E:
    """``call`` raises ``error`` (exactly that class or a subclass) mentioning ``fragments``."""
    with pytest.raises(error) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    return info.value


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """A healthy table: write 1 inserts 200 rows, write 2 deletes two of them."""
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000", {0: insert_events(1, 0, rows(200))})
    write_dir(root, "delete_delta_0000002_0000002_0000",
              {0: delete_events([(1, B0, 0), (1, B0, 7)], 2)})
    assert read(root).num_rows == 198
    return root


INSERT_FILE = "delta_0000001_0000001_0000/bucket_00000"
DELETE_FILE = "delete_delta_0000002_0000002_0000/bucket_00000"


# --- damaged files ------------------------------------------------------------------------------


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("target", [INSERT_FILE, DELETE_FILE])
@pytest.mark.parametrize("damage", ["half", "one byte short", "random bytes", "garbage tail",
                                    "not orc at all"])
def test_damaged_file_is_corrupt_file_error_naming_it(table: Path, reader: str, target: str,
                                                      damage: str) -> None:
    path = table / target
    data = path.read_bytes()
    damaged = {
        "half": data[:len(data) // 2],
        "one byte short": data[:-1],
        "random bytes": os.urandom(len(data)),
        "garbage tail": data + b"\x01\x02\x03",
        "not orc at all": b"this is a text file\n",
    }[damage]
    path.write_bytes(damaged)
    error = raises(CorruptFileError, lambda: read(table, reader), str(path))
    assert isinstance(error, DataError)  # CorruptFileError is a kind of DataError
    assert error.path == str(path)


@pytest.mark.parametrize("reader", READERS)
def test_corrupt_stripe_body(table: Path, reader: str) -> None:
    """A valid footer over scrambled stripe data: the decoder's failure names the file."""
    path = table / INSERT_FILE
    data = bytearray(path.read_bytes())
    for i in range(10, 400):
        data[i] = (data[i] * 7 + 13) % 256
    path.write_bytes(bytes(data))
    raises(CorruptFileError, lambda: read(table, reader), str(path), "stripe 0")
    # streaming the scan fails the same way
    scan = acidstore.scan_directory(table, SCHEMA, reader=reader)  # type: ignore[arg-type]
    raises(CorruptFileError, lambda: list(scan.to_batches()), str(path))


@pytest.mark.parametrize("reader", READERS)
def test_corrupt_original_file(tmp_path: Path, reader: str) -> None:
    root = tmp_path / "t"
    write_original(root / "000000_0", rows(3))
    write_original(root / "000000_0_copy_1", rows(3, 3))
    path = root / "000000_0_copy_1"
    path.write_bytes(path.read_bytes()[:20])
    raises(CorruptFileError, lambda: read(root, reader), str(path))


@pytest.mark.parametrize("reader", READERS)
def test_zero_length_files_are_empty(tmp_path: Path, reader: str) -> None:
    """A zero-length bucket, delete or original file holds no rows (Hive skips empty files);
    only the other files count."""
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000", {0: insert_events(1, 0, rows(3))})
    write_dir(root, "delta_0000002_0000002_0000", {0: insert_events(2, 0, rows(2, 10))})
    (root / "delta_0000002_0000002_0000" / "bucket_00000").write_bytes(b"")
    write_dir(root, "delete_delta_0000003_0000003_0000", {0: delete_events([(1, B0, 1)], 3)})
    (root / "delete_delta_0000003_0000003_0000" / "bucket_00000").write_bytes(b"")
    write_dir(root, "delete_delta_0000004_0000004_0000", {0: delete_events([(1, B0, 2)], 4)})
    (root / "000000_0").write_bytes(b"")
    write_original(root / "000000_0_copy_1", rows(1, 20))
    got = read(root, reader, with_row_id=True)
    assert [(r["id"], r["row__id"]["writeid"], r["row__id"]["rowid"]) for r in got.to_pylist()
            ] == [(20, 0, 0), (0, 1, 0), (1, 1, 1)]


@pytest.mark.parametrize("reader", READERS)
def test_damage_in_unselected_directories_is_not_read(table: Path, reader: str) -> None:
    """Only the files the snapshot selects are opened: garbage in an aborted delta or a delta
    above the watermark does not fail the read."""
    for name in ("delta_0000003_0000003_0000", "delete_delta_0000004_0000004_0000"):
        (table / name).mkdir()
        (table / name / "bucket_00000").write_bytes(b"garbage")
    assert read(table, reader, write_ids=f"default.t:4:{LONG_MAX}::3,4").num_rows == 198
    assert read(table, reader, write_ids=f"default.t:2:{LONG_MAX}::").num_rows == 198
    # with every write id valid they are selected, and whichever is opened first is named
    error = raises(CorruptFileError, lambda: read(table, reader))
    assert error.path in {
        str(table / "delta_0000003_0000003_0000" / "bucket_00000"),
        str(table / "delete_delta_0000004_0000004_0000" / "bucket_00000")}


@pytest.mark.parametrize("reader", READERS)
def test_wrong_event_types(tmp_path: Path, reader: str) -> None:
    """ACID field names with the wrong types (``bucket`` as bigint) are a damaged file, not an
    "original" file to be read as user rows."""
    root = tmp_path / "t"
    events = insert_events(1, 0, rows(3))
    events = events.set_column(2, "bucket", events.column("bucket").cast(pa.int64()))
    (root / "delta_0000001_0000001_0000").mkdir(parents=True)
    path = root / "delta_0000001_0000001_0000" / "bucket_00000"
    po.write_table(events, str(path))
    raises(CorruptFileError, lambda: read(root, reader), str(path), "'bucket'", "int64")


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("target", [INSERT_FILE, DELETE_FILE])
def test_plain_orc_where_events_belong(table: Path, reader: str, target: str) -> None:
    path = table / target
    write_original(path, rows(2))
    raises(CorruptFileError, lambda: read(table, reader), str(path), "no ACID event schema")


# --- files that decode but break the format ---------------------------------------------------


@pytest.mark.parametrize("reader", READERS)
def test_delete_file_with_events_of_another_bucket(tmp_path: Path, reader: str) -> None:
    """``delete_delta_*/bucket_1`` holding deletes for bucket 0 (Hive's
    DeleteReaderValue.checkBucketId)."""
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000", {1: insert_events(1, 1, rows(5))})
    write_dir(root, "delete_delta_0000002_0000002_0000",
              {1: delete_events([(1, B1, 0), (1, B0, 1)], 2)})
    path = root / "delete_delta_0000002_0000002_0000" / "bucket_00001"
    raises(DataError, lambda: read(root, reader),
           "Corrupted records with different bucket ids", "Expected bucket id 1", str(path))
    raises(DataError, lambda: read(root, reader, delete_event_limit=0),
           "Corrupted records with different bucket ids", str(path))


@pytest.mark.parametrize("reader", READERS)
def test_insert_file_with_events_of_another_bucket(tmp_path: Path, reader: str) -> None:
    """``delta_*/bucket_1`` whose events say bucket 0: refused whenever ROW__IDs are decoded
    (to apply deletes or to return them)."""
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000", {1: insert_events(1, 0, rows(5))})
    path = root / "delta_0000001_0000001_0000" / "bucket_00001"
    raises(DataError, lambda: read(root, reader, with_row_id=True),
           "Corrupted records with different bucket ids", "Expected bucket id 1",
           "however found 0", str(path))
    write_dir(root, "delete_delta_0000002_0000002_0000", {1: delete_events([(1, B1, 0)], 2)})
    raises(DataError, lambda: read(root, reader),
           "Corrupted records with different bucket ids", str(path))


@pytest.mark.parametrize("reader", READERS)
def test_unknown_bucket_codec_version(tmp_path: Path, reader: str) -> None:
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000",
              {0: events_table([(INSERT, 1, 3 << 29, 0, 1, rows(1)[0])])})
    path = root / "delta_0000001_0000001_0000" / "bucket_00000"
    raises(DataError, lambda: read(root, reader, with_row_id=True),
           "Illegal 'bucket' format. Version=3", str(path))


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("rows_per_stripe", [None, 1])
@pytest.mark.parametrize("case", ["swapped", "duplicate", "bucket order"])
def test_insert_events_out_of_key_order(tmp_path: Path, reader: str,
                                        rows_per_stripe: int | None, case: str) -> None:
    """Insert events must be strictly increasing by ROW__ID, within and across stripes."""
    root = tmp_path / "t"
    r = rows(3)
    events = {
        "swapped": [(INSERT, 1, B0, 0, 1, r[0]), (INSERT, 1, B0, 2, 1, r[1]),
                    (INSERT, 1, B0, 1, 1, r[2])],
        "duplicate": [(INSERT, 1, B0, 0, 1, r[0]), (INSERT, 1, B0, 1, 1, r[1]),
                      (INSERT, 1, B0, 1, 1, r[2])],
        # statement 1's property sorts after statement 0's
        "bucket order": [(INSERT, 1, B0 + 1, 0, 1, r[0]), (INSERT, 1, B0, 1, 1, r[1]),
                         (INSERT, 1, B0, 2, 1, r[2])],
    }[case]
    write_dir_stripes(root, "delta_0000001_0000001_0000", {0: events_table(events)},
                      rows_per_stripe=rows_per_stripe)
    write_dir(root, "delete_delta_0000002_0000002_0000", {0: delete_events([(1, B0, 5)], 2)})
    path = root / "delta_0000001_0000001_0000" / "bucket_00000"
    raises(DataError, lambda: read(root, reader), "out of ROW__ID order", str(path))
    raises(DataError, lambda: read(root, reader, with_row_id=True, delete_event_limit=0),
           "out of ROW__ID order", str(path))


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("rows_per_stripe", [None, 1])
def test_delete_events_out_of_key_order(tmp_path: Path, reader: str,
                                        rows_per_stripe: int | None) -> None:
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000", {0: insert_events(1, 0, rows(5))})
    write_dir_stripes(root, "delete_delta_0000002_0000002_0000",
                      {0: events_table([(DELETE, 1, B0, 3, 2, None),
                                        (DELETE, 1, B0, 1, 2, None)])},
                      rows_per_stripe=rows_per_stripe)
    path = root / "delete_delta_0000002_0000002_0000" / "bucket_00000"
    raises(DataError, lambda: read(root, reader), "out of ROW__ID order", "(1, 536870912, 1)",
           str(path))


@pytest.mark.parametrize("reader", READERS)
def test_repeated_delete_key_is_legal(tmp_path: Path, reader: str) -> None:
    """Unlike inserts, delete events may repeat a key (and are applied once)."""
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000", {0: insert_events(1, 0, rows(3))})
    write_dir(root, "delete_delta_0000002_0000002_0000",
              {0: events_table([(DELETE, 1, B0, 1, 2, None), (DELETE, 1, B0, 1, 2, None)])})
    assert read(root, reader, columns=["id"]).to_pylist() == [{"id": 0}, {"id": 2}]


# --- layout --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["delta_abc", "base_x", "delta_1", "delete_delta_5_x",
                                  "delta_1_2_3_4", "base_"])
def test_unparsable_directory_name(table: Path, name: str) -> None:
    (table / name).mkdir()
    raises(InvalidLayoutError, lambda: read(table), str(table / name))
    raises(InvalidLayoutError, lambda: acidstore.scan_directory(table), str(table / name))


def test_unreadable_metadata_acid(table: Path) -> None:
    write_dir(table, "base_0000002", {0: insert_events(2, 0, rows(1))})
    marker = table / "base_0000002" / "_metadata_acid"
    marker.write_text("{not json")
    raises(InvalidLayoutError, lambda: read(table), str(marker))
    marker.write_text('{"thisFileVersion":"7","dataFormat":"compacted"}')
    raises(InvalidLayoutError, lambda: read(table), str(marker), "version")


def test_missing_table_directory(tmp_path: Path) -> None:
    raises(TableNotFoundError, lambda: read(tmp_path / "nope"), str(tmp_path / "nope"))
    (tmp_path / "file").write_text("x")
    raises(TableNotFoundError, lambda: read(tmp_path / "file"))


# --- bad requests -----------------------------------------------------------------------------


@pytest.mark.parametrize("snapshot", [None, f"default.t:0:{LONG_MAX}::"])
def test_unknown_column(table: Path, snapshot: str | None) -> None:
    error = raises(InvalidInputError, lambda: read(table, columns=["id", "nope"],
                                                   write_ids=snapshot), "'nope'")
    assert not isinstance(error, InvalidExpressionError)


def test_columns_are_case_insensitive_and_may_be_empty(table: Path) -> None:
    assert read(table, columns=["AMOUNT", "Id"]).column_names == ["amount", "id"]
    nothing = read(table, columns=[])
    assert (nothing.num_columns, nothing.num_rows) == (0, 198)
    assert read(table, columns=[], filter="id < 10").num_rows == 8


def test_bad_snapshot_strings(table: Path) -> None:
    raises(InvalidInputError, lambda: read(table, write_ids="garbage"), "garbage")
    raises(InvalidInputError, lambda: read(table, write_ids="t:x:1::"), "t:x:1::")
    raises(InvalidInputError, lambda: read(table, txns="1"), "'1'")
    raises(InvalidInputError, lambda: read(table, reader="fast"), "'fast'")


BAD_FILTERS = [
    ("id >", "syntax"),
    ("nope = 1", "unknown column"),
    ("id = 1 AND nope > 2", "unknown column"),
    ("1; select 2", "';'"),
    ("1) AS m FROM x; SELECT (1", "x"),
    ("1) AS m FROM __acidstore_batch UNION SELECT (1", "unbalanced"),
    ("(id > 1", "unbalanced '('"),
    ("id", "not a boolean"),
    ("", "empty"),
    ("   ", "empty"),
]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize(("predicate", "fragment"), BAD_FILTERS)
@pytest.mark.parametrize("snapshot", ["all rows", "no rows"])
def test_bad_sql_filter(table: Path, reader: str, predicate: str, fragment: str,
                        snapshot: str) -> None:
    """A bad predicate fails whether or not the snapshot has rows to evaluate it on."""
    write_ids = None if snapshot == "all rows" else f"default.t:0:{LONG_MAX}::"
    error = raises(InvalidExpressionError,
                   lambda: read(table, reader, filter=predicate, write_ids=write_ids))
    if fragment not in ("syntax", "unknown column"):
        assert fragment in str(error)
    if fragment == "unknown column":
        assert "nope" in str(error)


@pytest.mark.parametrize("reader", READERS)
def test_pyarrow_expression_filter(table: Path, reader: str) -> None:
    expr = (pc.field("id") >= 190) & (pc.field("name") != "n195")
    got = read(table, reader, filter=expr, columns=["id"])
    assert got.to_pylist() == [{"id": i} for i in range(190, 200) if i != 195]
    raises(InvalidExpressionError, lambda: read(table, reader, filter=pc.field("nope") > 1))
    raises(InvalidExpressionError, lambda: read(table, reader, filter=pc.field("id") + 1))


def test_sql_filter_cannot_read_files(table: Path, tmp_path: Path) -> None:
    """The evaluator has no external access: a predicate cannot read files."""
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    raises(InvalidExpressionError, lambda: read(
        table, filter=f"id IN (SELECT a FROM read_csv('{secret}'))"))


# --- history -----------------------------------------------------------------------------------


@pytest.mark.parametrize("reader", READERS)
def test_not_enough_history(tmp_path: Path, reader: str) -> None:
    """A compacted base erased the history a snapshot needs: below its write id, or with a
    write id inside it still open for the reader."""
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000", {0: insert_events(1, 0, rows(2))})
    write_dir(root, "delta_0000003_0000003_0000", {0: insert_events(3, 0, rows(2, 10))})
    write_dir(root, "base_0000003_v0000010",
              {0: pa.concat_tables([insert_events(1, 0, rows(2)),
                                    insert_events(3, 0, rows(2, 10))])})
    assert read(root, reader).num_rows == 4
    raises(NotEnoughHistoryError, lambda: read(root, reader, write_ids=f"default.t:1:{LONG_MAX}::"),
           "Not enough history available for (1,x).  Oldest available base: ",
           str(root / "base_0000003_v0000010"))
    raises(NotEnoughHistoryError, lambda: read(root, reader, write_ids="default.t:5:2:2:"),
           "(5,2)")
    # before the compaction committed, the deltas are still the truth
    assert read(root, reader, write_ids=f"default.t:1:{LONG_MAX}::", txns="20:10:10:"
                ).num_rows == 2
    # an INSERT OVERWRITE base (not compacted) never raises: it is just not usable
    os.rename(root / "base_0000003_v0000010", root / "base_0000003")
    assert read(root, reader, write_ids=f"default.t:1:{LONG_MAX}::").num_rows == 2
