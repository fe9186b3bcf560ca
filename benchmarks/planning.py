"""Planning cost of a read against the partitions and files of a table, on local disk and on
an S3 API server (moto's, on loopback), and W12's one-row DML latency against the deltas.

    python -m benchmarks.planning                       # the full run (about 13 minutes)
    python -m benchmarks.planning --partitions 10 100 --s3-partitions 10 --records 10 \\
        --deltas 10 50 --repeat 3                       # a quick one
    python -m benchmarks.planning --plot docs/img/planning.png

Reads of a warehouse table plan from the metastore's record (``read.record_plan``): the
partitions come from the metastore (or from the filter, when it pins them), each
partition's directories and bucket files from its committed writes, and nothing is listed.
What a read costs the store should then grow with what it reads, not with the table. For
each store and each number of partitions P the script builds a table (one INSERT of two rows
into each of P partitions, then a one-row DELETE in partition ``00007``: a delta per
partition and a delete delta in one) and measures, through the public path (the snapshot,
then ``TableHandle.scan_at``, as ``Table.to_arrow`` plans):

- the plan time of a full read and of a one-partition read (``p = '00007'``), the median of
  ``--repeat`` plans, and the files each planned;
- the filesystem calls each plan made (listings, ``stat`` calls, opens), counted by a
  ``pyarrow.fs.PyFileSystem`` wrapper around the store (``planning_fs``), and on S3 the
  requests the server answered meanwhile;
- the same counts of the reads themselves (``Table.to_arrow``, with and without the
  filter): the files opened, and on S3 the requests by kind.

On moto (an in-memory server in one Python process) building the 10,000-partition table
takes most of the run's time (about 8 of its 13 minutes on 2 busy cores);
``--s3-partitions`` sets the sizes measured there. The files dimension goes to 1,000,000 with
synthetic records (``planning_records``): the metastore's record of a write of 100 bucket
files per partition, made through its own API, with no file written; only plans are timed.
The metastore is a SQLite file on local disk for every store, so the stores compare like
with like.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

import acidstore
from benchmarks.planning_fs import CountingHandler, counting
from benchmarks.planning_records import (
    DmlPoint,
    SyntheticPoint,
    median_seconds,
    partition_name,
    plan,
    synthetic,
    w12_against_deltas,
)
from benchmarks.s3_server import S3Server
from benchmarks.s3_server import start as start_s3

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("p", pa.string())])
#: the partition a one-partition read reads (and the DELETE deletes from)
ONE = partition_name(7)
ONE_FILTER = f"p = '{ONE}'"
PARTITIONS = (10, 20, 100, 1_000, 10_000)
S3_PARTITIONS = PARTITIONS
RECORD_PARTITIONS = (10, 100, 1_000, 10_000)
DELTAS = (10, 50, 100, 200)


@dataclass(frozen=True)
class Calls:
    """What one action asked of the store: filesystem calls (``list``, ``stat``, ``open``)
    and, on S3, the requests the server answered by kind (``list``, ``head``, ``get``,
    ``other``); ``files`` is what it planned or read."""

    fs: Counter[str]
    requests: Counter[str] | None
    files: int

    @property
    def sent(self) -> int | None:
        return None if self.requests is None else sum(self.requests.values())


@dataclass(frozen=True)
class Point:
    """One table of ``partitions`` partitions on ``store``."""

    store: str
    partitions: int
    full_plan_seconds: float
    one_plan_seconds: float
    full_plan: Calls
    one_plan: Calls
    full_read: Calls
    one_read: Calls


@dataclass
class Results:
    points: list[Point] = field(default_factory=list)
    records: list[SyntheticPoint] = field(default_factory=list)
    dml: list[DmlPoint] = field(default_factory=list)


def request_kind(line: str) -> str:
    """The kind of an S3 request the server logged: a listing, a HEAD (stat), a GET of an
    object (a read, or a ranged part of one), or anything else (writes, bucket calls)."""
    method, _, rest = line.partition('"')[2].partition(" ")
    target = rest.split(" ", 1)[0]
    if method == "GET" and ("list-type=" in target or "delimiter=" in target
                            or "prefix=" in target):
        return "list"
    if method == "HEAD":
        return "head"
    if method == "GET":
        return "get"
    return "other"


@dataclass
class Store:
    """A warehouse on one store, its call counter and, on S3, its server."""

    name: str
    wh: acidstore.Warehouse
    handler: CountingHandler
    server: S3Server | None = None

    def count(self, action: Callable[[], int]) -> Calls:
        """The calls ``action`` makes (it returns the files it planned or read)."""
        before = len(self.server.requests()) if self.server is not None else 0
        self.handler.reset()
        files = action()
        calls = self.handler.reset()
        if self.server is None:
            return Calls(calls, None, files)
        lines = self.server.requests()[before:]
        return Calls(calls, Counter(request_kind(line) for line in lines), files)


#: opens a warehouse of its own for one table: (store name, P) -> Store
Opener = Callable[[int], Store]


@contextmanager
def stores(use_s3: bool, server: S3Server | None = None) -> Iterator[dict[str, Opener]]:
    """The stores to measure. Every table gets a warehouse (and, on S3, a bucket) and a
    SQLite metastore of its own: moto lists a bucket by scanning all its keys, so tables
    sharing one would slow each other's requests, which real S3 does not. ``server``: a
    running S3 server to use (and leave running), else one is started and stopped."""
    with tempfile.TemporaryDirectory(prefix="acidstore-planning-") as tmp:
        root = Path(tmp)

        def local(partitions: int) -> Store:
            fs, handler = counting(pafs.LocalFileSystem())
            (root / f"local-{partitions}").mkdir()
            wh = acidstore.connect(str(root / f"local-{partitions}"), filesystem=fs,
                                   metastore=f"sqlite:///{root}/local-{partitions}.db")
            return Store("local", wh, handler)

        openers: dict[str, Opener] = {"local": local}
        own = start_s3() if use_s3 and server is None else None
        s3 = own or (server if use_s3 else None)
        if s3 is not None:
            def remote(partitions: int) -> Store:
                fs, handler = counting(s3.filesystem())
                wh = acidstore.connect(f"{s3.new_bucket()}/wh", filesystem=fs,
                                       metastore=f"sqlite:///{root}/s3-{partitions}.db")
                return Store("s3", wh, handler, s3)

            openers["s3"] = remote
        try:
            yield openers
        finally:
            if own is not None:
                own.stop()


def build(wh: acidstore.Warehouse, partitions: int) -> acidstore.Table:
    """One INSERT of two rows (ids ``2i``, ``2i + 1``) into each of the partitions, then a
    one-row DELETE (id 15) in partition ``00007``, pinned by its filter."""
    t = wh.create_table("bench.t", SCHEMA, partition_by=["p"])
    ids = list(range(2 * partitions))
    t.insert(pa.table({"id": ids, "v": ids, "p": [partition_name(i // 2) for i in ids]},
                      schema=SCHEMA))
    t.delete(f"{ONE_FILTER} AND id = 15")
    return t


def measure(store: Store, partitions: int, repeat: int) -> Point:
    """Plan times and call counts of a full and a one-partition read of a new table."""
    t = build(store.wh, partitions)

    def planned(filter: str | None) -> Callable[[], int]:
        return lambda: len(plan(t, filter).splits)

    def read(filter: str | None, rows: int) -> Callable[[], int]:
        def action() -> int:
            got = t.to_arrow(filter=filter).num_rows
            if got != rows:
                raise RuntimeError(f"{store.name}, {partitions} partitions: read {got} rows "
                                   f"with filter {filter!r}, not {rows}")
            return store.handler.calls["open"]
        return action

    full_plan, one_plan = store.count(planned(None)), store.count(planned(ONE_FILTER))
    # a delta per partition, and the delete delta of ONE (applied to its delta's split)
    if full_plan.files != partitions or one_plan.files != 1:
        raise RuntimeError(f"{store.name}, {partitions} partitions: planned "
                           f"{full_plan.files} and {one_plan.files} splits")
    return Point(store.name, partitions,
                 full_plan_seconds=median_seconds(repeat, planned(None)),
                 one_plan_seconds=median_seconds(repeat, planned(ONE_FILTER)),
                 full_plan=full_plan, one_plan=one_plan,
                 full_read=store.count(read(None, 2 * partitions - 1)),
                 one_read=store.count(read(ONE_FILTER, 1)))


def run(partitions: Sequence[int] = PARTITIONS, s3_partitions: Sequence[int] = S3_PARTITIONS,
        records: Sequence[int] = RECORD_PARTITIONS, deltas: Sequence[int] = DELTAS,
        repeat: int = 5, use_s3: bool = True, server: S3Server | None = None,
        progress: Callable[[str], None] = lambda _: None) -> Results:
    """Every measurement of the benchmark (``progress`` hears of each as it ends)."""
    out = Results()
    with stores(use_s3, server) as openers:
        for name, opener in openers.items():
            for count in (partitions if name == "local" else s3_partitions):
                store = opener(count)
                with store.wh:
                    out.points.append(measure(store, count, repeat))
                progress(f"{name}: {count} partitions")
    out.records = synthetic(records, repeat)
    progress("synthetic records")
    out.dml = w12_against_deltas(deltas, repeat)
    progress("W12 against deltas")
    return out


def main(argv: list[str] | None = None) -> None:
    from benchmarks.planning_report import plot, report

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--partitions", type=int, nargs="+", default=list(PARTITIONS))
    parser.add_argument("--s3-partitions", type=int, nargs="*", default=list(S3_PARTITIONS),
                        help="none: local disk only")
    parser.add_argument("--records", type=int, nargs="+", default=list(RECORD_PARTITIONS),
                        help="partitions of the synthetic tables (100 files each)")
    parser.add_argument("--deltas", type=int, nargs="+", default=list(DELTAS))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--plot", type=Path, help="write the figure (PNG) here")
    args = parser.parse_args(argv)
    results = run(args.partitions, args.s3_partitions, args.records, args.deltas,
                  args.repeat, use_s3=bool(args.s3_partitions),
                  progress=lambda what: print(f"measured {what}", flush=True))
    print(report(results))
    if args.plot is not None:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
