"""Planning cost of a read: listing plus directory selection, per partition and per file, on
local disk and on an S3 API server (moto's, on loopback).

    python -m benchmarks.planning                      # local disk and a throwaway S3 server
    python -m benchmarks.planning --partitions 50 --repeat 5

A read plans before it decodes anything: the snapshot (metastore), the partition directories
(one listing per partition level), then per partition its ACID state (a listing of the
partition), the recorded writes its selection must find (metastore: the committed writes at
or above the partition's base, for the missing-data check; loaded as the partitions are
selected) and the bucket files of each selected directory (a listing each).
The script builds tables whose shapes differ in one dimension at a time (partitions; bucket
files per directory; delta directories per partition), times each phase (the median of
``--repeat`` plans), fits the per-partition, per-directory and per-file costs, and projects
them to 10,000 partitions and 1,000,000 files. The metastore is a SQLite file on local disk
for both stores, so the storage columns compare like with like.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

import acidstore
from acidstore.engine.handle import handle_of
from acidstore.read.recorded import Recorded
from acidstore.read.scan import Scan, table_partitions
from benchmarks.s3_server import start as start_s3

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("p", pa.string())])


@dataclass(frozen=True)
class Shape:
    """A table: ``partitions`` partitions, ``buckets`` bucket files per delta, ``writes``
    inserts (one delta directory per partition each)."""

    name: str
    partitions: int
    buckets: int
    writes: int

    @property
    def directories(self) -> int:
        return self.partitions * self.writes

    @property
    def files(self) -> int:
        return self.directories * self.buckets


@dataclass(frozen=True)
class Timing:
    shape: Shape
    store: str
    snapshot: float
    partitions: float
    recorded: float
    select: float
    #: S3 requests of one plan's listing and selection (None: local disk)
    requests: int | None = None

    @property
    def total(self) -> float:
        return self.snapshot + self.partitions + self.recorded + self.select


def _rows(shape: Shape, write: int) -> pa.Table:
    """Enough rows per partition that every bucket gets some (ids spread by Hive's hash)."""
    per = shape.buckets * 8
    ids = [write * 10**9 + p * per + i for p in range(shape.partitions) for i in range(per)]
    return pa.table({"id": ids, "v": ids,
                     "p": [f"{i // per % shape.partitions:05d}" for i in range(len(ids))]},
                    schema=SCHEMA)


def build(wh: acidstore.Warehouse, shape: Shape) -> acidstore.Table:
    t = wh.create_table(f"bench.{shape.name}", SCHEMA, partition_by=["p"], bucket_by=["id"],
                        buckets=shape.buckets)
    for write in range(shape.writes):
        t.insert(_rows(shape, write))
    return t


def _median(repeat: int, step: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(t: acidstore.Table, shape: Shape, store: str, repeat: int,
            requests: Callable[[], int] | None = None) -> Timing:
    fs = handle_of(t).filesystem
    columns = handle_of(t).info.partition_schema.names
    txns, write_ids = handle_of(t).read_snapshot()
    recorded = handle_of(t).recorded_writes()

    def plan() -> Scan:
        found = table_partitions(fs, t.location, columns)
        return Scan(fs, found, write_ids, txns, schema=handle_of(t).info.schema,
                    partition_schema=handle_of(t).info.partition_schema, recorded=recorded)

    before = requests() if requests is not None else 0
    planned = len(plan().splits)
    sent = requests() - before if requests is not None else None
    if planned != shape.files:
        raise RuntimeError(f"{shape.name}: planned {planned} files, built {shape.files}")
    found = table_partitions(fs, t.location, columns)

    def select(record: Recorded) -> Scan:
        return Scan(fs, found, write_ids, txns, schema=handle_of(t).info.schema,
                    partition_schema=handle_of(t).info.partition_schema, recorded=record)

    # the record loads lazily, per partition, as the scan selects directories: planning with
    # the (already loaded) record of the first plan is listing and selection alone, planning
    # with a new one adds the metastore reads
    warm = _median(repeat, lambda: select(recorded))
    cold = _median(repeat, lambda: select(handle_of(t).recorded_writes()))
    return Timing(
        shape, store,
        snapshot=_median(repeat, handle_of(t).read_snapshot),
        partitions=_median(repeat, lambda: table_partitions(fs, t.location, columns)),
        recorded=max(cold - warm, 0.0), select=warm, requests=sent)


def shapes(partitions: int, buckets: int, writes: int) -> list[Shape]:
    """A base shape and one variation per dimension."""
    return [Shape("base", partitions, 1, 1),
            Shape("more_partitions", 2 * partitions, 1, 1),
            Shape("more_files", partitions, buckets, 1),
            Shape("more_directories", partitions, 1, writes)]


@dataclass(frozen=True)
class Costs:
    """Seconds per partition (with its one directory and file), per extra delta directory
    and per extra bucket file, of listing plus selection; metastore seconds per committed
    write of a partition (the recorded-writes read)."""

    per_partition: float
    per_directory: float
    per_file: float
    metastore_per_write: float
    metastore_per_file: float


def fit(timings: list[Timing]) -> Costs:
    by = {t.shape.name: t for t in timings}
    base, parts, files, dirs = (by[n] for n in ("base", "more_partitions", "more_files",
                                                "more_directories"))

    def storage(t: Timing) -> float:
        return t.partitions + t.select

    per_partition = (storage(parts) - storage(base)) / (parts.shape.partitions
                                                       - base.shape.partitions)
    per_file = (storage(files) - storage(base)) / (files.shape.files - base.shape.files)
    per_directory = ((storage(dirs) - storage(base))
                     / (dirs.shape.directories - base.shape.directories)) - per_file
    meta_file = (files.recorded - base.recorded) / (files.shape.files - base.shape.files)
    meta_write = (dirs.recorded - base.recorded) / (dirs.shape.directories
                                                    - base.shape.directories) - meta_file
    # (small tables on a shared machine can fit a slightly negative cost: it is noise)
    return Costs(max(per_partition, 0.0), max(per_directory, 0.0), max(per_file, 0.0),
                 max(meta_write, 0.0), max(meta_file, 0.0))


#: opens a fresh warehouse for one shape: (warehouse, S3 request counter or None)
Opener = Callable[[str], tuple[acidstore.Warehouse, Callable[[], int] | None]]


@contextmanager
def stores(use_s3: bool) -> Iterator[list[tuple[str, Opener]]]:
    """The stores to measure. Every shape gets a warehouse (and, on S3, a bucket) of its own:
    moto lists a bucket by scanning all its keys, so tables sharing one would slow each
    other's listings, which real S3 does not."""
    with tempfile.TemporaryDirectory(prefix="acidstore-planning-") as tmp:
        root = Path(tmp)

        def local(name: str) -> tuple[acidstore.Warehouse, Callable[[], int] | None]:
            return acidstore.connect(root / "local" / name,
                                     metastore=f"sqlite:///{root / f'local-{name}.db'}"), None

        out: list[tuple[str, Opener]] = [("local", local)]
        server = start_s3() if use_s3 else None
        if server is not None:
            def remote(name: str) -> tuple[acidstore.Warehouse, Callable[[], int] | None]:
                wh = acidstore.connect(f"s3://{server.new_bucket()}/wh",
                                       metastore=f"sqlite:///{root / f's3-{name}.db'}",
                                       filesystem=server.filesystem())
                return wh, lambda: len(server.requests())

            out.append(("s3 (moto)", remote))
        try:
            yield out
        finally:
            if server is not None:
                server.stop()


def run(partitions: int, buckets: int, writes: int, repeat: int, use_s3: bool = True,
        ) -> dict[str, tuple[list[Timing], Costs]]:
    results: dict[str, tuple[list[Timing], Costs]] = {}
    with stores(use_s3) as places:
        for store, opener in places:
            timings = []
            for shape in shapes(partitions, buckets, writes):
                wh, requests = opener(shape.name)
                with wh:
                    timings.append(measure(build(wh, shape), shape, store, repeat, requests))
            results[store] = (timings, fit(timings))
    return results


def report(results: dict[str, tuple[list[Timing], Costs]]) -> str:
    lines = ["store       shape             partitions  dirs   files  snapshot  partitions "
             " recorded   select    total (ms)  S3 requests"]
    for timings, _ in results.values():
        for t in timings:
            lines.append(
                f"{t.store:<11} {t.shape.name:<17} {t.shape.partitions:>10} "
                f"{t.shape.directories:>5} {t.shape.files:>7} {t.snapshot * 1e3:>9.1f} "
                f"{t.partitions * 1e3:>11.1f} {t.recorded * 1e3:>9.1f} {t.select * 1e3:>8.1f} "
                f"{t.total * 1e3:>9.1f}  {'' if t.requests is None else t.requests:>11}")
    lines.append("")
    lines.append("store       ms/partition  ms/directory  ms/file  metastore: ms/write  ms/file")
    for store, (_, c) in results.items():
        lines.append(f"{store:<11} {c.per_partition * 1e3:>12.3f} {c.per_directory * 1e3:>13.3f}"
                     f" {c.per_file * 1e3:>8.4f} {c.metastore_per_write * 1e3:>20.4f}"
                     f" {c.metastore_per_file * 1e3:>8.4f}")
    lines.append("")
    lines.append("projected, 10,000 partitions of one delta with 100 bucket files each "
                 "(1,000,000 files), planned one after another:")
    for store, (_, c) in results.items():
        storage = 10_000 * c.per_partition + 990_000 * c.per_file
        metastore = 10_000 * c.metastore_per_write + 990_000 * c.metastore_per_file
        lines.append(f"  {store:<11} listing + selection {storage:8,.1f} s;"
                     f" recorded writes from the metastore {metastore:6,.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--buckets", type=int, default=8,
                        help="bucket files per directory of the 'more_files' shape")
    parser.add_argument("--writes", type=int, default=4,
                        help="delta directories per partition of the 'more_directories' shape")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-s3", action="store_true", help="local disk only")
    args = parser.parse_args(argv)
    print(report(run(args.partitions, args.buckets, args.writes, args.repeat,
                     use_s3=not args.no_s3)))


if __name__ == "__main__":
    main()
