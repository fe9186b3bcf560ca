"""``acidstore example`` and ``acidstore demo``: data to try the other commands on.

``example DIR`` writes a small table's whole life as real ORC files, as Hive lays them out:
an insert, an update, a delete, then a minor and a major compaction, so ``inspect`` and
``read`` have every kind of directory to show. ``demo`` runs an order pipeline on Spark.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.api.pairing import METASTORE_ENV, WAREHOUSE_ENV, chosen_pair, default_warehouse
from acidstore.cli.demo import DEFAULT_ORDERS, run_demo
from acidstore.errors import InvalidInputError
from acidstore.format.layout import (
    ACID_VERSION,
    ACID_VERSION_FILE,
    base_name,
    bucket_file_name,
    delta_name,
)
from acidstore.format.orc.codec import BucketCodec
from acidstore.format.orc.file_writer import write_event_file
from acidstore.format.orc.schema import DELETE, INSERT, event_schema

if TYPE_CHECKING:
    from acidstore.cli.common import Subparsers

__all__ = ["add_example_commands", "run_demo_command", "run_example", "write_example"]

EXAMPLE_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
#: where ``acidstore demo`` writes when neither --warehouse nor ACIDSTORE_WAREHOUSE says
DEMO_WAREHOUSE = "demo-warehouse"


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
    """The worked timeline on disk: returns the directories written, in order."""
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


def run_example(args: argparse.Namespace) -> None:
    root = Path(args.path)
    if root.exists() and any(root.iterdir()):
        raise InvalidInputError(f"{root} is not empty; choose a new directory")
    for name in write_example(root):
        print(f"wrote {root / name}")
    print("\nTry: acidstore inspect", root, "--txns '11:11:11:'   (as if the major "
          "compaction, txn 12, had not committed)")


def run_demo_command(args: argparse.Namespace) -> None:
    # an explicit --warehouse, else ACIDSTORE_WAREHOUSE, else the demo's own directory
    warehouse, metastore = chosen_pair(args.warehouse or default_warehouse() or DEMO_WAREHOUSE,
                                       args.metastore)
    run_demo(Path(warehouse), master=args.master, orders=args.orders, metastore=metastore)


def add_example_commands(sub: Subparsers) -> None:
    example = sub.add_parser(
        "example", help="write a small example table (insert, update, delete, minor and "
        "major compaction) to a new directory")
    example.add_argument("path", metavar="DIR", help="a directory that does not exist yet")
    demo = sub.add_parser("demo", help="run an order ETL pipeline on Spark")
    demo.add_argument("--warehouse", default=None,
                      help=f"warehouse directory (created if missing; default "
                           f"${WAREHOUSE_ENV}, else ./{DEMO_WAREHOUSE}); the demo's table "
                           "shop.orders is re-created on every run")
    demo.add_argument("--master", default=None,
                      help="Spark master URL (default: $SPARK_MASTER, else local[*])")
    demo.add_argument("--metastore", default=None,
                      help=f"metastore URL, e.g. postgresql://user@host:5432/db (default: "
                           f"${METASTORE_ENV}, else a SQLite file in the warehouse)")
    demo.add_argument("--orders", type=int, default=DEFAULT_ORDERS,
                      help=f"orders in the initial load (default {DEFAULT_ORDERS})")
