"""The ``acidstore`` command line (layer L5).

- ``acidstore inspect PATH``: what a snapshot reads in each partition (base, deltas, delete
  deltas, originals) and what the cleaner could remove (obsolete, aborted), as Hive decides it.
- ``acidstore read PATH``: the rows of a Hive-layout table or partition as of a snapshot.
- ``acidstore demo``: the main job, an order ETL pipeline on Spark (``--master``, or
  ``SPARK_MASTER``, default ``local[*]``).
- ``acidstore example PATH``: lays out the worked timeline of spec §17 (insert, update,
  delete, minor and major compaction) as real ORC files, so the other commands have data.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore import fs as afs
from acidstore.cli_compact import add_compact_command, run_compact
from acidstore.cli_fsck import add_fsck_command, run_fsck
from acidstore.demo import DEFAULT_ORDERS, run_demo
from acidstore.directory import acid_state
from acidstore.errors import AcidStoreError
from acidstore.layout import (
    ACID_VERSION,
    ACID_VERSION_FILE,
    base_name,
    bucket_file_name,
    delta_name,
)
from acidstore.orc.codec import BucketCodec
from acidstore.orc.io import write_event_file
from acidstore.orc.schema import DELETE, INSERT, event_schema
from acidstore.read.api import scan_directory
from acidstore.read.scan import discover_partitions
from acidstore.writeids import ValidTxnList, ValidWriteIdList

__all__ = ["main"]

EXAMPLE_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _events(rows: list[tuple[int, int, int, int, int, tuple[int, str] | None]]) -> pa.Table:
    """Events (op, originalTransaction, bucket, rowId, currentTransaction, row)."""
    return pa.table({
        "operation": pa.array([r[0] for r in rows], pa.int32()),
        "originalTransaction": pa.array([r[1] for r in rows], pa.int64()),
        "bucket": pa.array([r[2] for r in rows], pa.int32()),
        "rowId": pa.array([r[3] for r in rows], pa.int64()),
        "currentTransaction": pa.array([r[4] for r in rows], pa.int64()),
        "row": pa.array([None if r[5] is None else {"id": r[5][0], "name": r[5][1]}
                         for r in rows], pa.struct(list(EXAMPLE_SCHEMA))),
    }, schema=event_schema(EXAMPLE_SCHEMA))


def write_example(root: Path) -> list[str]:
    """Spec §17 on disk: returns the directories written, in order."""
    fs = pafs.LocalFileSystem()
    b0 = BucketCodec.V1.encode(0, 0)
    b1 = BucketCodec.V1.encode(0, 1)  # the update's insert branch is statement 1
    steps: list[tuple[str, pa.Table]] = [
        (delta_name(1, 1, 0), _events([(INSERT, 1, b0, 0, 1, (1, "ann")),
                                       (INSERT, 1, b0, 1, 1, (2, "bob"))])),
        (delta_name(2, 2, 0, delete=True), _events([(DELETE, 1, b0, 0, 2, None)])),
        (delta_name(2, 2, 1), _events([(INSERT, 2, b1, 0, 2, (1, "ann v2"))])),
        (delta_name(3, 3, 0, delete=True), _events([(DELETE, 1, b0, 1, 3, None)])),
        # minor compaction in txn 10: the same events, row ids unchanged
        (delta_name(1, 3, visibility_txn_id=10),
         _events([(INSERT, 1, b0, 0, 1, (1, "ann")), (INSERT, 1, b0, 1, 1, (2, "bob")),
                  (INSERT, 2, b1, 0, 2, (1, "ann v2"))])),
        (delta_name(1, 3, delete=True, visibility_txn_id=10),
         _events([(DELETE, 1, b0, 0, 2, None), (DELETE, 1, b0, 1, 3, None)])),
        # major compaction in txn 12: only the surviving row, keeping its ROW__ID
        (base_name(3, 12), _events([(INSERT, 2, b1, 0, 2, (1, "ann v2"))])),
    ]
    written = []
    for name, events in steps:
        directory = root / name
        directory.mkdir(parents=True, exist_ok=True)
        (directory / ACID_VERSION_FILE).write_text(ACID_VERSION)
        write_event_file(fs, str(directory / bucket_file_name(0)), events)
        written.append(name)
    return written


def _snapshot(args: argparse.Namespace) -> tuple[ValidWriteIdList, ValidTxnList | None]:
    ids = ValidWriteIdList.parse(args.write_ids) if args.write_ids else \
        ValidWriteIdList.all_valid()
    txns = ValidTxnList.parse(args.txns) if args.txns else None
    return ids, txns


def _inspect(args: argparse.Namespace) -> None:
    fs, root = afs.resolve(args.path)
    ids, txns = _snapshot(args)
    print(f"snapshot: write ids {ids}; txns {txns if txns else 'all committed'}")
    for partition in discover_partitions(fs, root):
        state = acid_state(partition.path, ids, txns, filesystem=fs)
        label = "/".join(f"{k}={v}" for k, v in partition.values) or "(table)"
        print(f"\npartition {label}")
        print(f"  base:          {state.base or '-'}")
        print(f"  deltas:        {', '.join(state.deltas) or '-'}")
        print(f"  delete deltas: {', '.join(state.delete_deltas) or '-'}")
        print(f"  originals:     {', '.join(state.original_files) or '-'}")
        print(f"  obsolete:      {', '.join(state.obsolete) or '-'}")
        print(f"  aborted:       {', '.join(state.aborted) or '-'}")


def _read(args: argparse.Namespace) -> None:
    ids, txns = _snapshot(args)
    scan = scan_directory(args.path, write_ids=ids, txns=txns,
                          columns=args.columns.split(",") if args.columns else None,
                          filter=args.filter, with_row_id=args.row_id, reader=args.reader)
    table = scan.to_table()
    shown = table.slice(0, args.limit)
    print(shown.to_pandas().to_string(index=False) if shown.num_rows else "(no rows)")
    print(f"\n{table.num_rows} row(s) from {len(scan.splits)} split(s)")


def _example(args: argparse.Namespace) -> None:
    root = Path(args.path)
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"{root} is not empty; choose a new directory")
    for name in write_example(root):
        print(f"wrote {root / name}")
    print("\nTry: acidstore inspect", root, "--txns '11:11:11:'   (compaction 12 not committed)")


def _demo(args: argparse.Namespace) -> None:
    run_demo(Path(args.warehouse), master=args.master, orders=args.orders,
             metastore=args.metastore)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acidstore", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (("inspect", "directories a snapshot reads"),
                           ("read", "rows of a table or partition")):
        cmd = sub.add_parser(name, help=helptext)
        cmd.add_argument("path")
        cmd.add_argument("--write-ids",
                         help="ValidWriteIdList string, e.g. default.t:3:9223372036854775807::")
        cmd.add_argument("--txns", help="ValidTxnList string, e.g. 11:11:11: (txn 11 open)")
    read = sub.choices["read"]
    read.add_argument("--columns", help="comma-separated column names")
    read.add_argument("--filter", help="SQL predicate, e.g. \"amount < 0\"")
    read.add_argument("--row-id", action="store_true", help="add the row__id column")
    read.add_argument("--reader", choices=["vectorized", "merge"], default="vectorized")
    read.add_argument("--limit", type=int, default=50, help="rows to print")
    example = sub.add_parser("example", help="write spec §17's timeline to a new directory")
    example.add_argument("path")
    demo = sub.add_parser("demo", help="run the order ETL pipeline on Spark")
    demo.add_argument("--warehouse", default="demo-warehouse",
                      help="warehouse directory (created if missing; default ./demo-warehouse); "
                           "the demo's table shop.orders is re-created on every run")
    demo.add_argument("--master", default=None,
                      help="Spark master URL (default: $SPARK_MASTER, else local[*])")
    demo.add_argument("--metastore", default=None,
                      help="metastore URL, e.g. postgresql://user@host:5432/db (default: a "
                           "SQLite file in the warehouse)")
    demo.add_argument("--orders", type=int, default=DEFAULT_ORDERS,
                      help=f"orders in the initial load (default {DEFAULT_ORDERS})")
    add_compact_command(sub)
    add_fsck_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {"inspect": _inspect, "read": _read, "example": _example, "demo": _demo,
                "compact": run_compact, "fsck": run_fsck}
    try:
        code = handlers[args.command](args)  # a handler may return its exit code
    except AcidStoreError as exc:
        print(f"acidstore: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
