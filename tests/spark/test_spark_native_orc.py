"""Java ORC (Spark's native reader) reads the ORC files acidstore writes.

acidstore writes ORC with pyarrow (C++ ORC) and then appends Hive's ACID user metadata by
rewriting the file tail (``acidstore.format.orc.footer``). Hive, Spark and every other JVM
consumer read
these files with Java ORC, which parses the postscript, footer and compressed chunks itself; a
footer that C++ ORC and pyarrow accept is not proof that Java accepts it. So every bucket file a
real table produces (insert deltas, delete deltas, bases, an empty base), under each codec a
table can name in ``orc.compress``, is read here through the JVM twice:

- ``spark.read.orc``: every ACID column and every ``row`` field must equal what pyarrow decodes;
- ``org.apache.orc.OrcFile.createReader``: the ``hive.acid.*`` user metadata must be present and
  hold what Hive's ``OrcRecordUpdater`` would have written for the rows Java sees, stripe by
  stripe as Java splits them.

Spark's ``count()`` on a file with the ACID event schema fails inside Java ORC (an empty
projection of an ACID-shaped file; files Spark writes itself with those field names fail the
same way), so rows are always read in full here.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.orc as po
import pytest

import acidstore
from acidstore.errors import SchemaMismatchError
from acidstore.format.orc.acid_metadata import (
    ACID_VERSION,
    ACID_VERSION_KEY,
    KEY_INDEX_KEY,
    STATS_KEY,
    RowKey,
    format_key_index,
    parse_acid_stats,
)
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.footer import add_user_metadata
from acidstore.format.orc.schema import (
    ACID_FIELDS,
    BUCKET,
    DELETE,
    INSERT,
    OPERATION,
    ORIGINAL_TRANSACTION,
    ROW_ID,
    UPDATE,
)
from acidstore.write import files

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("qty", pa.int32()),
    pa.field("name", pa.string()),
    pa.field("price", pa.float64()),
    pa.field("paid", pa.bool_()),
    pa.field("day", pa.date32()),
    pa.field("at", pa.timestamp("us")),
    pa.field("amount", pa.decimal128(10, 2)),
    pa.field("big", pa.decimal128(38, 10)),
    pa.field("dt", pa.string()),
])
#: The event schema as Java ORC must report it: Hive's field names and Hive's types.
ORC_TYPE = ("struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
            "currentTransaction:bigint,row:struct<id:bigint,qty:int,name:string,price:double,"
            "paid:boolean,day:date,at:timestamp,amount:decimal(10,2),big:decimal(38,10)>>")

#: ``orc.compress`` value -> the CompressionKind Java ORC must see in the postscript.
CODECS: dict[str | None, str] = {
    None: "ZSTD",  # no property: acidstore's default
    "snappy": "SNAPPY",
    "zlib": "ZLIB",
    "uncompressed": "NONE",
    "lz4": "LZ4",
}


def _rows() -> pa.Table:
    """Edge values per type (nulls, extremes, sub-second times, unicode) in two partitions.

    Timestamps before 1970 are whole seconds here: with a fraction, pyarrow's writer makes
    files Java ORC rejects (see ``test_pre_1970_fractional_timestamps``)."""
    ts = dt.datetime
    rows: list[dict[str, Any]] = [
        {"id": 1, "qty": 2_147_483_647, "name": "ann", "price": 1.5, "paid": True,
         "day": dt.date(2024, 2, 29), "at": ts(2024, 2, 29, 23, 59, 59, 999_999),
         "amount": Decimal("12345678.90"),
         "big": Decimal("1234567890123456789012345678.0123456789"), "dt": "2024-01-01"},
        {"id": 2, "qty": -2_147_483_648, "name": "", "price": -0.25, "paid": False,
         "day": dt.date(1970, 1, 1), "at": ts(1970, 1, 1), "amount": Decimal("-0.01"),
         "big": Decimal("-0.0000000001"), "dt": "2024-01-01"},
        {"id": 3, "qty": None, "name": None, "price": None, "paid": None, "day": None, "at": None,
         "amount": None, "big": None, "dt": "2024-01-01"},
        {"id": 2**62, "qty": 0, "name": "größe ✓ 日本", "price": 1e300, "paid": True,
         "day": dt.date(1900, 1, 1), "at": ts(1969, 12, 31, 23, 59, 59),
         "amount": Decimal("0.00"), "big": Decimal("0E-10"), "dt": "2024-01-01"},
        {"id": -7, "qty": 7, "name": "x" * 300, "price": -1e-300, "paid": False,
         "day": dt.date(2038, 1, 19), "at": ts(2038, 1, 19, 3, 14, 8, 1),
         "amount": Decimal("99999999.99"), "big": Decimal("1.5"), "dt": "2024-01-02"},
        {"id": 8, "qty": 8, "name": "eight", "price": 8.0, "paid": True,
         "day": dt.date(2024, 1, 2), "at": ts(2024, 1, 2, 8), "amount": Decimal("8.00"),
         "big": Decimal("8"), "dt": "2024-01-02"},
        {"id": 9, "qty": 9, "name": "nine", "price": 9.0, "paid": None,
         "day": dt.date(2024, 1, 2), "at": ts(1900, 1, 1), "amount": Decimal("9.99"),
         "big": Decimal("-9"), "dt": "2024-01-02"},
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _write_tables(root: Path, codec: str | None) -> list[Path]:
    """Every kind of file a table writes, under one codec; returns the bucket files."""
    wh = acidstore.connect(root / "wh")
    props = {} if codec is None else {"orc.compress": codec}
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2,
                        properties=props)
    data = _rows()
    t.insert(data)                                           # delta_1 in both partitions
    t.update("id IN (1, 2)", {"name": "name || '!'", "qty": "0"})  # delete_delta + delta
    t.delete("id = -7")                                      # delete_delta in 2024-01-02
    t.insert_overwrite(data.filter(pc.equal(data["dt"], "2024-01-02")))  # base_4
    empty = wh.create_table("db.e", SCHEMA.remove(SCHEMA.get_field_index("dt")),
                            bucket_by=["id"], buckets=2, properties=props)
    empty.insert(data.drop_columns(["dt"]).slice(0, 2))
    empty.insert_overwrite(data.drop_columns(["dt"]).slice(0, 0))  # base with an empty file
    files = sorted(p for p in (root / "wh").rglob("bucket_*") if p.is_file())
    kinds = {p.parent.name.split("_")[0] for p in files}
    assert kinds == {"base", "delta", "delete"}, kinds
    assert any(po.ORCFile(str(p)).nrows == 0 for p in files)
    return files


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str | None, list[Path]]:
    """The bucket files of one warehouse per codec, written once for the module (each
    with the codec, the empty one too: these few rows would otherwise be written
    uncompressed)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(files, "SMALL_FILE_ROWS", -1)
        return {codec: _write_tables(tmp_path_factory.mktemp(f"orc-{codec or 'default'}"),
                                     codec) for codec in CODECS}


def _comparable(table: pa.Table) -> list[dict[str, Any]]:
    """Rows with timestamps as naive microseconds: pyarrow decodes ORC timestamps as naive
    nanoseconds, Spark as UTC instants in microseconds (session time zone is UTC)."""
    def plain(typ: pa.DataType) -> pa.DataType:
        if pa.types.is_timestamp(typ):
            return pa.timestamp("us")
        if pa.types.is_struct(typ):
            return pa.struct([f.with_type(plain(f.type)) for f in typ])
        return typ

    target = pa.schema([f.with_type(plain(f.type)) for f in table.schema])
    rows: list[dict[str, Any]] = table.cast(target).to_pylist()
    return rows


def _local(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


@pytest.mark.parametrize("codec", list(CODECS))
def test_spark_reads_every_bucket_file(spark: SparkSession, codec: str | None,
                                       written: Mapping[str | None, list[Path]]) -> None:
    """One Spark scan of all of a codec's files equals pyarrow's decoding, file by file."""
    files = written[codec]
    df = spark.read.orc([str(p) for p in files]).select("*", "_metadata.file_path")
    assert tuple(df.columns[:-1]) == ACID_FIELDS
    got = df.toArrow()
    by_file: dict[Path, list[int]] = {}
    for i, uri in enumerate(got.column("file_path").to_pylist()):
        by_file.setdefault(_local(uri), []).append(i)
    got = got.drop_columns(["file_path"])
    for path in files:
        want = po.read_table(str(path))
        rows = got.take(pa.array(by_file.get(path, []), pa.int64()))
        # Spark splits nothing here (tiny files), so each file's rows come in file order
        assert _comparable(rows) == _comparable(want), path
    assert sum(len(v) for v in by_file.values()) == sum(po.ORCFile(str(p)).nrows for p in files)


def _jvm(spark: SparkSession) -> Any:
    """The py4j gateway's view of the driver JVM (the ORC jars ship with Spark)."""
    jvm = spark._jvm
    assert jvm is not None
    return jvm


def _java_reader(spark: SparkSession, path: Path) -> Any:
    """Java ORC's own reader, which parses the file tail without Spark in between."""
    jvm = _jvm(spark)
    options = jvm.org.apache.orc.OrcFile.readerOptions(spark._jsc.hadoopConfiguration())
    return jvm.org.apache.orc.OrcFile.createReader(jvm.org.apache.hadoop.fs.Path(str(path)),
                                                  options)


def _java_metadata(spark: SparkSession, reader: Any) -> dict[str, bytes]:
    utf8 = _jvm(spark).java.nio.charset.StandardCharsets.UTF_8
    out: dict[str, bytes] = {}
    for key in reader.getMetadataKeys():
        text: str = utf8.decode(reader.getMetadataValue(key)).toString()
        out[str(key)] = text.encode("utf-8")
    return out


def _expected_metadata(events: pa.Table, stripe_rows: list[int]) -> dict[str, bytes]:
    """What Hive's OrcRecordUpdater writes for these events: the last key of each non-empty
    stripe, the event counts, and version 2 (spec 3.2)."""
    keys: list[RowKey] = []
    end = 0
    for count in stripe_rows:
        end += count
        if count:
            last = events.slice(end - 1, 1)
            keys.append((last[ORIGINAL_TRANSACTION][0].as_py(), last[BUCKET][0].as_py(),
                         last[ROW_ID][0].as_py()))
    ops = Counter(events.column(OPERATION).to_pylist())
    return {
        KEY_INDEX_KEY: format_key_index(keys).encode(),
        STATS_KEY: f"{ops[INSERT]},{ops[UPDATE]},{ops[DELETE]}".encode(),
        ACID_VERSION_KEY: ACID_VERSION,
    }


@pytest.mark.parametrize("codec", list(CODECS))
def test_java_orc_reads_the_acid_user_metadata(spark: SparkSession, codec: str | None,
                                               written: Mapping[str | None, list[Path]]
                                               ) -> None:
    """Java ORC parses the patched tail (postscript, footer, appended metadata chunks) and
    finds exactly the hive.acid.* keys, matching both pyarrow and the rows Java counts."""
    for path in written[codec]:
        reader = _java_reader(spark, path)
        try:
            assert reader.getCompressionKind().name() == CODECS[codec], path
            assert str(reader.getSchema().toString()) == ORC_TYPE, path
            stripe_rows = [int(s.getNumberOfRows()) for s in reader.getStripes()]
            meta = _java_metadata(spark, reader)
            nrows = int(reader.getNumberOfRows())
        finally:
            reader.close()
        events = po.read_table(str(path))
        assert nrows == sum(stripe_rows) == events.num_rows, path
        assert meta == _expected_metadata(events, stripe_rows), path
        assert meta == OrcFile(pafs.LocalFileSystem(), str(path)).user_metadata, path
        stats = parse_acid_stats(meta[STATS_KEY].decode())
        assert stats.inserts + stats.deletes == events.num_rows and stats.updates == 0, path


@pytest.mark.parametrize("compression", ["zlib", "zstd", "uncompressed"])
def test_java_orc_reads_metadata_spanning_many_chunks(
        spark: SparkSession, tmp_path: Path, compression: str) -> None:
    """Metadata bigger than the compression block is appended as several uncompressed chunks,
    each at most one block (Java ORC rejects a chunk longer than its buffer); Java must
    reassemble them byte for byte, values and all, next to the file's rows."""
    sink = pa.BufferOutputStream()
    data = pa.table({"a": pa.array(range(1000), pa.int64())})
    po.write_table(data, sink, compression=compression)
    big = bytes(ord("a") + i % 26 for i in range(700_000))  # > 2 blocks of 256 KiB
    items = {"k.small": b"v", "k.big": big, "k.utf8": "ÿ✓".encode()}
    path = tmp_path / "many_chunks.orc"
    path.write_bytes(add_user_metadata(sink.getvalue().to_pybytes(), items, path=str(path)))
    reader = _java_reader(spark, path)
    try:
        assert _java_metadata(spark, reader) == items
    finally:
        reader.close()
    assert spark.read.orc(str(path)).toArrow().column("a").to_pylist() == list(range(1000))


def test_pre_1970_fractional_timestamps_are_refused_at_write(spark: SparkSession,
                                                            tmp_path: Path) -> None:
    """pyarrow's ORC writer stores a negative nanosecond field for times before 1970 with a
    fraction; Java ORC rejects it ('nanos > 999999999 or < 0'), so Hive and Spark could not
    read such a file. The write refuses those values (issue 13.3); whole seconds before 1970
    are written and Spark reads them back."""
    wh = acidstore.connect(tmp_path / "wh")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("at", pa.timestamp("us"))])
    t = wh.create_table("db.ts", schema, bucket_by=["id"], buckets=1)
    for value in (dt.datetime(1960, 6, 1, 12, 0, 0, 250_000), dt.datetime(1900, 1, 1, 0, 0, 0, 1)):
        with pytest.raises(SchemaMismatchError, match="before 1970 with a fraction"):
            t.insert(pa.table({"id": [1], "at": pa.array([value], pa.timestamp("us"))},
                              schema=schema))
    assert list((tmp_path / "wh").rglob("bucket_*")) == []
    values = [dt.datetime(1960, 6, 1, 12, 0, 0), dt.datetime(1900, 1, 1, 0, 0, 1)]
    t.insert(pa.table({"id": [1, 2], "at": pa.array(values, pa.timestamp("us"))}, schema=schema))
    (path,) = (tmp_path / "wh").rglob("bucket_*")
    got = _comparable(spark.read.orc(str(path)).toArrow())
    assert [r["row"]["at"] for r in got] == values
