"""Diagnostic for S1: where Spark's native ORC read of Hive event files loses time against the
same rows as plain ORC files (issue 11). Not part of the benchmark run.

Usage: ``python -m benchmarks.s1_native_diag ROOT [--only NAME ...]`` where ROOT holds
``limit_after`` (the S1 peer's ten plain ORC files) and ``acid_after`` (the S1 table, a
warehouse). Variants of the same rows are written under ``ROOT/variants`` once. Each case runs
``warmups`` untimed scans, then ``repeat`` timed ones (building the DataFrame plus a ``noop``
write, as S1 times it); the table shows the best and median, the number of input splits
(Spark tasks of the scan stage) and the ratio to the peer's best.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.orc as po
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from pyspark.sql.types import StructType

from acidstore.config import ORC_COMPRESSION
from acidstore.format.orc.schema import ACID_FIELDS, ROW
from acidstore.spark import AcidTable
from acidstore.spark.native import _KEY, NATIVE_READ_CONF, _event_schema, _wall_clock
from acidstore.spark.native import _guard as _native_guard
from benchmarks.tasks_spark import session
from benchmarks.tasks_write import TABLE

Frame = Callable[[SparkSession], DataFrame]


def _table_dir(acid: Path) -> Path:
    database, name = TABLE.split(".")
    return acid / f"{database}.db" / name


def _insert_files(acid: Path) -> list[str]:
    """The bucket files of the first insert delta (W1's ten files, ~all rows)."""
    return sorted(str(p) for p in _table_dir(acid).glob("delta_0000001_*/bucket_*"))


def _all_insert_files(acid: Path) -> list[str]:
    return sorted(str(p) for p in _table_dir(acid).glob("delta_*/bucket_*"))


def _write_variants(root: Path) -> dict[str, Path]:
    """The same rows in other ORC layouts (ten files each, pyarrow unless named spark)."""
    out = root / "variants"
    limit = sorted((root / "limit_after").glob("*.orc"))
    events = _insert_files(root / "acid_after")
    plans: dict[str, Callable[[int], None]] = {}

    def flat(name: str, **options: object) -> None:
        def write(i: int) -> None:
            po.write_table(po.read_table(str(limit[i])), str(out / name / f"{i}.orc"),
                           **options)
        plans[name] = write

    flat("flat_dict", compression=ORC_COMPRESSION, stripe_size=64 << 20,
         dictionary_key_size_threshold=1.0)
    flat("flat_lz4_big_blocks", compression="lz4", stripe_size=64 << 20,
         compression_block_size=256 << 10)
    flat("flat_uncompressed", compression="uncompressed", stripe_size=64 << 20)

    def renamed(i: int) -> None:
        # the event file with the top-level names changed, so ORC-Java does not see an ACID
        # file and Spark may prune ``row``'s siblings (what a pruned ACID read would cost)
        table = po.read_table(events[i])
        table = table.rename_columns([f"x_{n}" if n != ROW else n for n in table.column_names])
        po.write_table(table, str(out / "events_renamed" / f"{i}.orc"),
                       compression=ORC_COMPRESSION, stripe_size=64 << 20)

    def flattened(i: int) -> None:
        # the same twelve values as flat columns
        table = po.read_table(events[i])
        row = table.column(ROW).combine_chunks()
        cols = {n: table.column(n) for n in ACID_FIELDS[:-1]}
        cols.update({row.type.field(j).name: row.field(j) for j in range(row.type.num_fields)})
        po.write_table(pa.table(cols), str(out / "events_flat12" / f"{i}.orc"),
                       compression=ORC_COMPRESSION, stripe_size=64 << 20)

    plans["events_renamed"] = renamed
    plans["events_flat12"] = flattened
    paths = {}
    for name, write in plans.items():
        target = out / name
        paths[name] = target
        if (target / "READY").exists():
            continue
        target.mkdir(parents=True, exist_ok=True)
        for i in range(len(limit)):
            write(i)
        (target / "READY").write_text("")
    return paths


def _spark_written(spark: SparkSession, root: Path) -> Path:
    target = root / "variants" / "spark_written"
    if not (target / "_SUCCESS").exists():
        spark.read.orc(str(root / "limit_after")).repartition(10).write.mode(
            "overwrite").option("compression", "zstd").orc(str(target))
    return target


def _file_schema(spark: SparkSession, files: list[str]) -> StructType:
    return spark.read.orc(files[0]).schema


def cases(root: Path, spark: SparkSession) -> dict[str, Frame]:
    variants = _write_variants(root)
    spark_written = _spark_written(spark, root)
    acid = root / "acid_after"
    inserts = _insert_files(acid)
    all_inserts = _all_insert_files(acid)
    schema = _file_schema(spark, inserts)
    row_type = schema[ROW].dataType
    assert isinstance(row_type, StructType)
    user = StructType(row_type.fields)

    def orc(path: Path | str) -> Frame:
        return lambda s: s.read.orc(str(path))

    def events(files: list[str], select: str, guard: bool = True) -> Frame:
        def frame(s: SparkSession) -> DataFrame:
            df = s.read.schema(schema).orc(files)
            if guard:
                df = df.where(_native_guard(True))
            return df.select("row.*") if select == "row" else df.select(
                *ACID_FIELDS[:-1], "row.*")
        return frame

    def renamed(select: str) -> Frame:
        def frame(s: SparkSession) -> DataFrame:
            df = s.read.orc(str(variants["events_renamed"]))
            return df.select("row.*") if select == "row" else df.select(
                *[c for c in df.columns if c != ROW], "row.*")
        return frame

    deletes = sorted(str(p) for p in _table_dir(acid).glob("delete_delta_*/bucket_*"))

    def native_parts(join: bool, rebuild_ts: bool) -> Frame:
        """The native path's plan taken apart: inserts under the guard, optionally the
        anti-join with the delete events and the zone-less timestamp rebuild."""
        def frame(s: SparkSession) -> DataFrame:
            events = _event_schema(user)
            df = s.read.schema(events).orc(all_inserts).where(_native_guard(True))
            if join:
                dead = s.read.schema(events).orc(deletes).where(_native_guard(False))
                df = df.join(dead.select(*_KEY), _KEY, "left_anti")
            return df.select(*[_wall_clock(f.name).alias(f.name) if rebuild_ts and
                               f.name == "ts" else F.col("row").getField(f.name).alias(f.name)
                               for f in user.fields])
        return frame

    small = [f for f in all_inserts if f not in inserts]

    def join_variant(how: str) -> Frame:
        """The anti-join spelled other ways: ``hash`` joins on one long (xxhash64 of the
        ROW__ID) and checks the three columns as the join's condition; ``flat`` flattens
        ``row`` before the join."""
        def frame(s: SparkSession) -> DataFrame:
            events = _event_schema(user)
            df = s.read.schema(events).orc(all_inserts).where(_native_guard(True))
            dead = s.read.schema(events).orc(deletes).where(_native_guard(False)).select(
                *[F.col(k).alias("d_" + k) for k in _KEY])
            out = [F.col("row").getField(f.name).alias(f.name) for f in user.fields]
            if how == "flat":
                df = df.select(*_KEY, *out)
                out = [F.col(f.name) for f in user.fields]
            if how == "hash":
                df = df.withColumn("h", F.xxhash64(*_KEY))
                dead = dead.withColumn("dh", F.xxhash64(*[f"d_{k}" for k in _KEY]))
                cond = (F.col("h") == F.col("dh"))
            else:
                cond = F.lit(True)
            for k in _KEY:
                cond = cond & (F.col(k) == F.col("d_" + k))
            return df.join(F.broadcast(dead), cond, "left_anti").select(*out)
        return frame

    def small_files(files: list[str], keys_only: bool) -> Frame:
        """Only the small files (the deltas of W2-W4): what each file costs to open."""
        def frame(s: SparkSession) -> DataFrame:
            df = s.read.schema(_event_schema(user)).orc(files).where(
                _native_guard(not keys_only))
            return df.select(*_KEY) if keys_only else df.select("row.*")
        return frame

    def acid_table(native: bool, warehouse: Path = acid) -> Frame:
        def frame(s: SparkSession) -> DataFrame:
            s.conf.set(NATIVE_READ_CONF, "true" if native else "false")
            return AcidTable.forName(s, TABLE, warehouse=str(warehouse)).toDF()
        return frame

    # the same table after a major compaction (``prepare_compacted``), when ROOT has it
    compacted = {"toDF() native path, compacted table": acid_table(
        True, root / "acid_compacted")} if (root / "acid_compacted").exists() else {}

    return {
        "peer: limit_after (pyarrow, zstd)": orc(root / "limit_after"),
        "plain, Spark-written zstd": orc(spark_written),
        "plain, pyarrow dictionary strings": orc(variants["flat_dict"]),
        "plain, pyarrow lz4 256k blocks": orc(variants["flat_lz4_big_blocks"]),
        "plain, pyarrow uncompressed": orc(variants["flat_uncompressed"]),
        "12 flat columns (events flattened)": orc(variants["events_flat12"]),
        "renamed events, row.* only": renamed("row"),
        "renamed events, all 12": renamed("all"),
        "ACID delta_1, all 12, guard": events(inserts, "all"),
        "ACID delta_1, row.*, guard": events(inserts, "row"),
        "ACID delta_1, all 12, no guard": events(inserts, "all", guard=False),
        "ACID all 120 insert files, all 12, guard": events(all_inserts, "all"),
        "native parts: 130 insert files, guard": native_parts(False, False),
        "native parts: + ts rebuilt": native_parts(False, True),
        "native parts: + anti-join": native_parts(True, False),
        "native parts: + anti-join + ts rebuilt": native_parts(True, True),
        "small files: 120 insert files of W2-W4": small_files(small, False),
        "small files: 120 delete files, keys": small_files(deletes, True),
        "join: 3 keys, struct through join": join_variant("struct"),
        "join: 3 keys, flattened first": join_variant("flat"),
        "join: xxhash64 key + 3-key condition": join_variant("hash"),
        "toDF() native path": acid_table(True),
        "toDF() Python data source": acid_table(False),
        **compacted,
    }


#: Spark confs tried on top of a case (``--conf`` picks one)
CONFS: dict[str, dict[str, str]] = {
    "default": {},
    "nested-vectorized-off": {"spark.sql.orc.enableNestedColumnVectorizedReader": "false"},
    "batch-16k": {"spark.sql.orc.columnarReaderBatchSize": "16384"},
    "no-wholestage": {"spark.sql.codegen.wholeStage": "false"},
    "split-32m": {"spark.sql.files.maxPartitionBytes": str(32 << 20)},
    "open-cost-0": {"spark.sql.files.openCostInBytes": "0"},
    "impl-hive": {"spark.sql.orc.impl": "hive"},
    "no-pushdown": {"spark.sql.orc.filterPushdown": "false"},
    "batch-1k": {"spark.sql.orc.columnarReaderBatchSize": "1024"},
    "huge-method-limit": {"spark.sql.codegen.hugeMethodLimit": "65535"},
    "no-aqe": {"spark.sql.adaptive.enabled": "false"},
}


@contextmanager
def confs(spark: SparkSession, values: dict[str, str]) -> Iterator[None]:
    old: dict[str, str | None] = {k: spark.conf.get(k, None) for k in values}
    for k, v in values.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, was in old.items():
            if was is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, was)


def _jvm(spark: SparkSession) -> psutil.Process:
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "a classic (not Spark Connect) session"
    return psutil.Process(int(jvm.java.lang.ProcessHandle.current().pid()))


def measure(spark: SparkSession, frame: Frame, warmups: int, repeat: int
            ) -> tuple[float, float, float, int]:
    """Best and median wall seconds, the JVM's median CPU seconds (user + system, all
    threads: on a shared machine the CPU a scan burns is steadier than its wall time), and
    the scan's input splits."""
    jvm = _jvm(spark)

    def once() -> tuple[float, float]:
        cpu = sum(jvm.cpu_times()[:2])
        start = time.perf_counter()
        frame(spark).write.format("noop").mode("overwrite").save()
        return time.perf_counter() - start, sum(jvm.cpu_times()[:2]) - cpu

    for _ in range(warmups):
        once()
    runs = [once() for _ in range(repeat)]
    splits = frame(spark).rdd.getNumPartitions()
    wall = [w for w, _ in runs]
    return min(wall), statistics.median(wall), statistics.median(c for _, c in runs), splits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--only", nargs="*", help="case names containing these words")
    parser.add_argument("--conf", nargs="*", default=["default"], choices=sorted(CONFS))
    parser.add_argument("--warmups", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = session()
    all_cases = cases(args.root, spark)
    peer_name = next(iter(all_cases))
    chosen = {k: v for k, v in all_cases.items()
              if not args.only or k == peer_name or any(w in k for w in args.only)}
    print("| case | conf | best s | median s | JVM CPU s | splits | best / peer | CPU / peer |")
    print("|---|---|---|---|---|---|---|---|")
    peer: tuple[float, float] | None = None
    for conf in args.conf:
        for name, frame in chosen.items():
            with confs(spark, CONFS[conf]):
                best, median, cpu, splits = measure(spark, frame, args.warmups, args.repeat)
            if peer is None:
                peer = (best, cpu)
            print(f"| {name} | {conf} | {best:.3f} | {median:.3f} | {cpu:.2f} | {splits} | "
                  f"{best / peer[0]:.2f}x | {cpu / peer[1]:.2f}x |", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
