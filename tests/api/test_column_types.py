"""Column types: a table takes only Arrow types that name a Hive type and round-trip through
ORC (``acidstore.format.orc.types``), partition columns only types that make directory names, and
inserted data converts to the table's types only where the values keep their meaning."""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import acidstore
from acidstore import Warehouse
from acidstore.api.merge_builder import MergeBuilder
from acidstore.engine.handle import handle_of
from acidstore.errors import CorruptFileError, InvalidInputError, SchemaMismatchError
from acidstore.format.orc.file_writer import write_event_file, write_orc_file
from acidstore.format.orc.schema import event_schema
from acidstore.format.orc.stream import EventFileWriter
from compaction import compact

pd: Any = importlib.import_module("pandas")  # no pandas stubs: the frames are data here
UTC = dt.UTC
TS = dt.datetime(2024, 5, 6, 7, 8, 9, 123000)

#: (column type, where the message points, the type it names) for every type a table refuses
REFUSED: list[tuple[pa.DataType, str, str]] = [
    (pa.uint8(), "'c'", "uint8"), (pa.uint16(), "'c'", "uint16"),
    (pa.uint32(), "'c'", "uint32"), (pa.uint64(), "'c'", "uint64"),
    (pa.float16(), "'c'", "halffloat"), (pa.time32("s"), "'c'", "time32[s]"),
    (pa.time64("us"), "'c'", "time64[us]"), (pa.duration("us"), "'c'", "duration[us]"),
    (pa.month_day_nano_interval(), "'c'", "month_day_nano_interval"),
    (pa.null(), "'c'", "null"), (pa.dictionary(pa.int32(), pa.string()), "'c'", "dictionary"),
    (pa.date64(), "'c'", "date64"), (pa.decimal256(40, 2), "'c'", "decimal256(40, 2)"),
    (pa.decimal128(5, -2), "'c'", "decimal128(5, -2)"), (pa.string_view(), "'c'", "string_view"),
    (pa.binary_view(), "'c'", "binary_view"), (pa.list_view(pa.int32()), "'c'", "list_view"),
    (pa.run_end_encoded(pa.int32(), pa.string()), "'c'", "run_end_encoded"),
    (pa.sparse_union([pa.field("a", pa.int64())]), "'c'", "sparse_union"),
    (pa.struct([]), "'c'", "struct<>"),
    (pa.list_(pa.uint8()), "'c.item'", "uint8"),
    (pa.struct([("a", pa.int32()), ("b", pa.struct([("u", pa.time64("us"))]))]),
     "'c.b.u'", "time64[us]"),
    (pa.map_(pa.string(), pa.uint32()), "'c.value'", "uint32"),
    (pa.map_(pa.struct([("a", pa.int32())]), pa.int32()), "'c'", "map<struct"),
    (pa.large_list(pa.dictionary(pa.int8(), pa.string())), "'c.item'", "dictionary"),
]

#: every kind of type a table takes, with values to round-trip
ACCEPTED: list[tuple[pa.DataType, list[Any]]] = [
    (pa.bool_(), [True]), (pa.int8(), [-8]), (pa.int16(), [300]), (pa.int32(), [-70000]),
    (pa.int64(), [2 ** 40]), (pa.float32(), [1.5]), (pa.float64(), [0.1]),
    (pa.decimal128(38, 10), [Decimal("12.5")]), (pa.string(), ["é"]),
    (pa.large_string(), ["x"]), (pa.binary(), [b"\x00\xff"]), (pa.large_binary(), [b"y"]),
    (pa.binary(3), [b"abc"]), (pa.date32(), [dt.date(2024, 5, 6)]),
    (pa.timestamp("s"), [TS.replace(microsecond=0)]), (pa.timestamp("ms"), [TS]),
    (pa.timestamp("us"), [TS]), (pa.timestamp("ns"), [TS]),
    (pa.timestamp("us", tz="UTC"), [TS.replace(tzinfo=UTC)]),
    (pa.list_(pa.int32()), [[1, 2]]), (pa.large_list(pa.string()), [["a"]]),
    (pa.list_(pa.int64(), 2), [[1, 2]]), (pa.struct([("a", pa.int32()), ("b", pa.string())]),
                                          [{"a": 1, "b": "x"}]),
    (pa.map_(pa.string(), pa.list_(pa.int64())), [[("k", [1])]]),
]


def _rows(kind: pa.DataType, values: list[Any]) -> pa.Table:
    return pa.table({"id": pa.array([1], pa.int64()), "c": pa.array(values, kind)})


@pytest.mark.parametrize(("kind", "where", "named"), REFUSED, ids=lambda v: str(v)[:40])
def test_create_table_refuses_types_without_a_hive_type_in_orc(
        wh: Warehouse, kind: pa.DataType, where: str, named: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        wh.create_table("db.t", pa.schema([("id", pa.int64()), ("c", kind)]))
    message = str(info.value)
    assert f"column {where}" in message and "of table db.t" in message
    assert named in message and "may be boolean, int8" in message
    assert wh.tables() == []
    assert not (Path(wh.location) / "db.db" / "t").exists()


@pytest.mark.parametrize(("kind", "where", "named"),
                         [r for r in REFUSED[:12] + REFUSED[-5:] if r[2] != "null"],
                         ids=lambda v: str(v)[:40])
def test_add_columns_refuses_them_and_the_table_stays_writable(
        wh: Warehouse, kind: pa.DataType, where: str, named: str) -> None:
    t = wh.create_table("db.t", pa.schema([("id", pa.int64())]))
    with pytest.raises(InvalidInputError) as info:
        t.add_columns(pa.schema([("c", kind)]))
    assert f"column {where}" in str(info.value) and named in str(info.value)
    again = wh.table("db.t")
    assert again.schema.names == ["id"] and handle_of(again).info.metadata_version == 0
    again.insert(pa.table({"id": [1, 2]}))
    again.update("id = 1", {"id": "3"})
    again.delete("id = 2")
    again.insert_overwrite(pa.table({"id": [3, 4]}))
    assert sorted(again.to_arrow().column("id").to_pylist()) == [3, 4]


def test_a_pandas_frame_with_an_unsigned_column_is_refused(wh: Warehouse) -> None:
    frame = pd.DataFrame({"id": [1], "n": np.array([7], dtype=np.uint16)})
    with pytest.raises(InvalidInputError, match=r"column 'n' of table db\.t has type uint16"):
        wh.create_table("db.t", frame)


@pytest.mark.parametrize(("kind", "values"), ACCEPTED, ids=lambda v: str(v)[:40])
def test_every_accepted_type_round_trips(wh: Warehouse, kind: pa.DataType,
                                         values: list[Any]) -> None:
    t = wh.create_table("db.t", pa.schema([("id", pa.int64()), ("c", kind)]))
    t.insert(_rows(kind, values))
    t.update("id = 1", {"id": "2"})
    t.insert(pa.table({"id": [3], "c": pa.nulls(1, kind)}))
    compact(t, "major")
    back = wh.table("db.t").to_arrow().sort_by("id")
    assert back.schema.field("c").type == kind
    assert back.column("c").to_pylist() == [*values, None]


@pytest.mark.parametrize("kind", [pa.struct([("a", pa.int32())]), pa.list_(pa.int32()),
                                  pa.map_(pa.string(), pa.int32()), pa.binary(),
                                  pa.large_binary(), pa.binary(2)], ids=str)
def test_partition_columns_must_make_directory_names(wh: Warehouse, kind: pa.DataType) -> None:
    with pytest.raises(InvalidInputError) as info:
        wh.create_table("db.p", pa.schema([("id", pa.int64()), ("p", kind)]),
                        partition_by=["p"])
    assert f"partition column 'p' of table db.p has type {kind}" in str(info.value)
    assert "may be boolean" in str(info.value)
    assert wh.tables() == []


def test_millisecond_timestamp_partitions_read_back(wh: Warehouse) -> None:
    """Their directory names used to carry six fraction digits, which do not parse as
    milliseconds: every read of the table failed."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.timestamp("ms"))])
    t = wh.create_table("db.p", schema, partition_by=["p"])
    t.insert(pa.table({"id": [1, 2], "p": [TS, TS.replace(microsecond=0)]}, schema=schema))
    assert wh.table("db.p").to_arrow().sort_by("id").column("p").to_pylist() == [
        TS, TS.replace(microsecond=0)]


# --- what the ORC writer refuses is no corrupt file --------------------------------------------


def test_an_orc_encoding_failure_is_a_schema_mismatch(tmp_path: Path) -> None:
    fs = pafs.LocalFileSystem()
    rows = pa.table({"u": pa.array([1], pa.uint8())})
    events = pa.table({name: pa.array([0], kind) for name, kind in zip(
        event_schema(rows.schema).names[:5], [pa.int32(), pa.int64(), pa.int32(), pa.int64(),
                                               pa.int64()], strict=True)}
                      | {"row": pa.StructArray.from_arrays([rows.column(0).chunk(0)], ["u"])})
    for path in (str(tmp_path / "plain"), str(tmp_path / "events")):
        with pytest.raises(SchemaMismatchError, match=r"cannot encode ORC for .*uint8") as info:
            if path.endswith("plain"):
                write_orc_file(fs, path, rows)
            else:
                write_event_file(fs, path, events)
        assert not isinstance(info.value, CorruptFileError)
        assert not Path(path).exists()
    path = str(tmp_path / "streamed")
    with pytest.raises(SchemaMismatchError, match="cannot encode ORC"), \
            EventFileWriter(fs, path, events.schema) as writer:
        writer.write(events)
    assert not Path(path).exists()


# --- implicit casts of inserted data -----------------------------------------------------------


@pytest.mark.parametrize(("column", "given"), [
    (pa.timestamp("us"), pa.array([5], pa.int64())),
    (pa.timestamp("us", tz="UTC"), pa.array([5], pa.int64())),
    (pa.date32(), pa.array([19000], pa.int32())),
    (pa.date32(), pa.array([TS], pa.timestamp("us"))),
    (pa.int64(), pa.array([TS], pa.timestamp("us"))),
    (pa.bool_(), pa.array([2], pa.int64())),
    (pa.int32(), pa.array([True], pa.bool_())),
    (pa.list_(pa.timestamp("us")), pa.array([[1]], pa.list_(pa.int64()))),
    (pa.struct([("t", pa.timestamp("us"))]), pa.array([{"t": 1}],
                                                       pa.struct([("t", pa.int64())]))),
], ids=lambda v: str(getattr(v, "type", v))[:30])
def test_inserts_refuse_casts_that_change_what_values_mean(
        wh: Warehouse, column: pa.DataType, given: pa.Array) -> None:
    t = wh.create_table("db.t", pa.schema([("id", pa.int64()), ("c", column)]))
    with pytest.raises(SchemaMismatchError) as info:
        t.insert(pa.table({"id": [1], "c": given}))
    message = str(info.value)
    assert "column 'c' of table db.t" in message
    assert str(column) in message and str(given.type) in message
    assert t.to_arrow().num_rows == 0 and t.history().num_rows == 0


def test_set_and_merge_values_refuse_them_too(wh: Warehouse) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us"))])
    t = wh.create_table("db.t", schema)
    t.insert(pa.table({"id": [1], "ts": [TS]}, schema=schema))
    with pytest.raises(SchemaMismatchError, match=r"'ts'.*int"):
        t.update("id = 1", {"ts": "5"})
    with pytest.raises(SchemaMismatchError, match=r"'ts'.*int"):
        t.merge(pa.table({"id": [1, 2], "ts": [5, 6]}), "t.id = s.id") \
            .when_matched_update({"ts": "s.ts"}).execute()
    with pytest.raises(SchemaMismatchError, match=r"'ts'.*int64"):
        t.merge(pa.table({"id": [2], "ts": [6]}), "t.id = s.id") \
            .when_not_matched_insert_all().execute()
    assert t.to_arrow().to_pylist() == [{"id": 1, "ts": TS}]


@pytest.mark.parametrize(("column", "given", "expected"), [
    (pa.int64(), pa.array([7], pa.int32()), 7),
    (pa.int32(), pa.array([7], pa.int64()), 7),
    (pa.float64(), pa.array([7], pa.int64()), 7.0),
    (pa.int64(), pa.array([7.0, None], pa.float64()), 7),  # pandas ints with a NaN
    (pa.decimal128(10, 2), pa.array([7.25]), Decimal("7.25")),
    (pa.string(), pa.array(["x"], pa.large_string()), "x"),
    (pa.string(), pa.array(["x"]).dictionary_encode(), "x"),  # a pandas category
    (pa.int64(), pa.nulls(1), None),  # an all-None pandas column
    (pa.timestamp("us"), pa.array([TS], pa.timestamp("ms")), TS),
    (pa.timestamp("us"), pa.array([dt.date(2024, 5, 6)], pa.date32()),
     dt.datetime(2024, 5, 6)),
    (pa.timestamp("us"), pa.array(["2024-05-06 07:08:09.123"]), TS),
    (pa.date32(), pa.array(["2024-05-06"]), dt.date(2024, 5, 6)),
    (pa.list_(pa.int64()), pa.array([[7]], pa.list_(pa.int8())), [7]),
], ids=lambda v: str(getattr(v, "type", v))[:30])
def test_inserts_keep_the_casts_that_keep_meaning(
        wh: Warehouse, column: pa.DataType, given: pa.Array, expected: Any) -> None:
    t = wh.create_table("db.t", pa.schema([("id", pa.int64()), ("c", column)]))
    t.insert(pa.table({"id": list(range(len(given))), "c": given}))
    assert t.to_arrow().sort_by("id").column("c").to_pylist()[0] == expected


# --- pandas frames Arrow cannot type ----------------------------------------------------------


def test_a_pandas_column_of_mixed_values_is_refused_by_name(wh: Warehouse) -> None:
    mixed = pd.DataFrame({"id": [1, 2], "x": [1, "a"]})
    with pytest.raises(InvalidInputError, match=r"table db\.b: column 'x' of the DataFrame") \
            as info:
        wh.create_table("db.b", mixed)
    assert not isinstance(info.value, pa.ArrowException)
    t = wh.create_table("db.b", pa.schema([("id", pa.int64()), ("x", pa.string())]))
    for write in (lambda: t.insert(mixed), lambda: t.merge(mixed, "t.id = s.id")):
        with pytest.raises(InvalidInputError, match="column 'x' of the DataFrame"):
            write()
    assert t.to_arrow().num_rows == 0


# --- zoned timestamps -------------------------------------------------------------------------


def test_a_merge_does_not_drop_the_zone_an_insert_refuses_to_drop(wh: Warehouse) -> None:
    """A zoned source timestamp copied into a column without a zone (INSERT *, UPDATE SET *,
    ``s.ts``) kept the UTC wall clock: 10:00 at +05:00 came back as 05:00. ``insert``
    refuses that; so does MERGE now, while an expression over it stays the user's SQL."""
    t = wh.create_table("db.z", pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us"))]))
    t.insert(pa.table({"id": [1], "ts": [TS]}))
    zoned = pa.table({"id": [1, 2], "ts": pa.array(
        [dt.datetime(2024, 1, 1, 5, tzinfo=dt.UTC)] * 2, pa.timestamp("us", tz="+05:00"))})
    merges: list[Callable[[MergeBuilder], MergeBuilder]] = [
        lambda m: m.when_not_matched_insert_all(),
        lambda m: m.when_matched_update_all(),
        lambda m: m.when_matched_update({"ts": "s.ts"}),
        lambda m: m.when_not_matched_insert({"id": "s.id", "ts": 's."ts"'}),
    ]
    for clauses in merges:
        with pytest.raises(SchemaMismatchError, match=r"'ts' of table db\.z.*zone"):
            clauses(t.merge(zoned, "t.id = s.id")).execute()
    assert t.to_arrow().to_pylist() == [{"id": 1, "ts": TS}]
    t.merge(zoned.select(["id"]), "t.id = s.id").when_matched_delete().execute()  # no copy
    assert t.to_arrow().num_rows == 0


def test_a_zoned_column_keeps_its_declared_zone(tmp_path: Path) -> None:
    """The files hold UTC instants (ORC's timestamp with local time zone has no zone of its
    own); the table's schema keeps the zone it was declared with, and reads return it."""
    kind = pa.timestamp("us", tz="+05:00")
    schema = pa.schema([("id", pa.int64()), ("ts", kind)])
    instant = TS.replace(tzinfo=UTC)
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.z", schema)
        t.insert(pa.table({"id": [1, 2], "ts": pa.array([instant, instant], kind)}))
        t.insert(pa.table({"id": [3], "ts": pa.array([instant], pa.timestamp("us", "UTC"))}))
        t.delete("id = 2")
        compact(t, "major")
    with acidstore.connect(tmp_path / "wh") as wh:
        back = wh.table("db.z")
        assert back.schema.field("ts").type == kind
        rows = back.to_arrow().sort_by("id")
        assert rows.schema.field("ts").type == kind
        assert rows.column("ts").cast(pa.timestamp("us", "UTC")).to_pylist() == [instant] * 2


def test_doubles_into_a_decimal_column_are_never_rounded(wh: Warehouse) -> None:
    """Arrow's safe cast rounds 0.129 to a decimal(5, 2)'s 0.13; a double is taken only when
    it is the double closest to its decimal (0.1 is 0.10), anything else is refused."""
    t = wh.create_table("db.prices", pa.schema([("id", pa.int64()),
                                                ("price", pa.decimal128(5, 2))]))
    for values in ([0.129], [19.999], [0.25, 1.005]):
        with pytest.raises(SchemaMismatchError, match="without rounding"):
            t.insert(pa.table({"id": list(range(len(values))), "price": values}))
    t.insert(pa.table({"id": [1, 2, 3], "price": [0.25, 0.1, None]}))
    assert t.to_arrow().sort_by("id").column("price").to_pylist() == [
        Decimal("0.25"), Decimal("0.10"), None]


def test_integers_into_a_decimal_column_are_taken_when_they_fit(wh: Warehouse) -> None:
    """Arrow refuses int64 -> decimal(10, 2) for any value (the type would need precision
    21); a value that fits is taken, one that does not is refused by name, and an UPDATE's
    integer literal fits the same way."""
    t = wh.create_table("db.prices", pa.schema([("id", pa.int64()),
                                                ("price", pa.decimal128(10, 2))]))
    t.insert(pa.table({"id": [1, 2], "price": [5, None]}))
    t.insert(pa.table({"id": pa.array([3], pa.int8()), "price": pa.array([-7], pa.int8())}))
    with pytest.raises(SchemaMismatchError, match="price"):
        t.insert(pa.table({"id": [4], "price": [10 ** 8]}))
    t.update("id = 2", {"price": "12"})
    assert t.to_arrow().sort_by("id").column("price").to_pylist() == [
        Decimal("5.00"), Decimal("12.00"), Decimal("-7.00")]


#: (nested type, one value with a timestamp no reader can read back, the path the error names)
NESTED_UNREADABLE: list[tuple[pa.DataType, Any, str]] = [
    (pa.list_(pa.timestamp("us")), [dt.datetime(3000, 1, 1)], "'c.item'"),
    (pa.list_(pa.timestamp("us")), [dt.datetime(1969, 12, 31, 23, 59, 59, 500_000)],
     "'c.item'"),
    (pa.struct([("t", pa.timestamp("ms"))]), {"t": dt.datetime(1500, 1, 1)}, "'c.t'"),
    (pa.map_(pa.timestamp("s"), pa.int32()), [(dt.datetime(2500, 1, 1), 1)], "'c.key'"),
    (pa.map_(pa.string(), pa.list_(pa.struct([("t", pa.timestamp("ns"))]))),
     [("k", [{"t": dt.datetime(1960, 1, 1, 0, 0, 0, 5)}])], "'c.value.item.t'"),
]


@pytest.mark.parametrize(("kind", "value", "where"), NESTED_UNREADABLE,
                         ids=lambda v: str(v)[:40])
def test_nested_timestamps_no_reader_can_read_back_are_refused(
        wh: Warehouse, kind: pa.DataType, value: Any, where: str) -> None:
    """A timestamp inside a list, struct or map is stored as a top-level one is: one outside
    pyarrow's nanosecond range used to be written and then made every read of the table a
    CorruptFileError; one before 1970 with a fraction, unreadable by Hive and Spark."""
    t = wh.create_table("db.t", pa.schema([("id", pa.int64()), ("c", kind)]))
    fine = {pa.types.is_list: [dt.datetime(2000, 1, 1)], pa.types.is_struct: {"t": None},
            pa.types.is_map: []}
    kept = next(v for test, v in fine.items() if test(kind))
    t.insert(pa.table({"id": [1, 2], "c": pa.array([kept, None], kind)}))
    with pytest.raises(SchemaMismatchError, match=f"column {where} holds"):
        t.insert(pa.table({"id": [3, 4], "c": pa.array([kept, value], kind)}))
    with pytest.raises(SchemaMismatchError, match=f"column {where} holds"):
        t.merge(pa.table({"id": [1], "c": pa.array([value], kind)}), "t.id = s.id"
                ).when_matched_update({"c": "s.c"}).execute()
    assert wh.table("db.t").to_arrow().sort_by("id").column("id").to_pylist() == [1, 2]


def test_dates_outside_years_1_to_9999_are_refused(wh: Warehouse) -> None:
    """``SET d = d - 1`` on 0001-01-01 stored year 0, and every ``to_pylist``/``to_pandas``
    of the table then failed (Hive's, Spark's and Python's DATE end there); such a date is
    refused at write, at the top level and nested, and the edges themselves are kept."""
    t = wh.create_table("db.d", pa.schema([("id", pa.int64()), ("d", pa.date32()),
                                           ("ds", pa.list_(pa.date32()))]))
    edges = [dt.date(1, 1, 1), dt.date(9999, 12, 31)]
    t.insert(pa.table({"id": [1, 2], "d": edges, "ds": [edges, None]}))
    with pytest.raises(SchemaMismatchError, match=r"column 'd' holds the date -719163 days"):
        t.update("id = 1", {"d": "d - 1"})
    with pytest.raises(SchemaMismatchError, match=r"column 'd' holds the date 2932897 days"):
        t.update("id = 2", {"d": "d + 1"})
    with pytest.raises(SchemaMismatchError, match=r"column 'ds.item' holds the date"):
        t.insert(pa.table({"id": [3], "d": [None], "ds": pa.array(
            [[-800_000]], pa.list_(pa.date32()))}, schema=t.schema))
    assert t.to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "d": edges[0], "ds": edges}, {"id": 2, "d": edges[1], "ds": None}]


def test_doubles_beyond_float32_are_refused_not_stored_as_infinity(wh: Warehouse) -> None:
    """Arrow's safe cast made 1e39 into a float column inf; SQL (DuckDB's CAST, Spark's
    ANSI cast) refuses it as out of range. Infinity and NaN themselves are still taken."""
    t = wh.create_table("db.f", pa.schema([("id", pa.int64()), ("f", pa.float32())]))
    t.insert(pa.table({"id": [1, 2], "f": [float("-inf"), float("nan")]}))
    with pytest.raises(SchemaMismatchError, match=r"column 'f'.*1e\+39 is out of range"):
        t.insert(pa.table({"id": [3], "f": [1e39]}))
    with pytest.raises(SchemaMismatchError, match=r"out of range for float"):
        t.update("id = 1", {"f": "-1e39"})
    with pytest.raises(SchemaMismatchError, match=r"out of range for float"):
        t.merge(pa.table({"id": [2], "x": [3.5e38]}), "t.id = s.id"
                ).when_matched_update({"f": "s.x"}).execute()
    t.update("id = 1", {"f": "'inf'"})
    back = t.to_arrow().sort_by("id").column("f").to_pylist()
    assert back[0] == float("inf") and back[1] != back[1]
