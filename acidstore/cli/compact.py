"""``acidstore compact``: compaction from the shell, for cron, Airflow or a terminal.

``--auto`` runs initiator, worker and cleaner once; ``--every 5m`` keeps doing it;
``--table db.t --kind major`` compacts one table now. Long compactions draw a progress bar on
stderr when it is a terminal (nothing in logs); a summary ends every pass.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from acidstore.cli.common import (
    add_table_argument,
    add_warehouse_options,
    emit,
    handle,
    jsonable,
    open_warehouse,
    table_argument,
)
from acidstore.cli.progress import ProgressBar
from acidstore.config import RETENTION_SECONDS
from acidstore.errors import InvalidInputError, import_optional
from compaction import compact, run_every, run_once
from compaction.compactor import CompactionResult
from compaction.scheduler import PassSummary, parse_interval

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["add_compact_command", "run_compact"]


def add_compact_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = sub.add_parser("compact", help="run compaction: --auto (initiator, worker, cleaner) "
                         "once or --every INTERVAL, or --table/--kind now")
    add_table_argument(cmd, "compact this table now (with --kind); or give --auto or --every")
    add_warehouse_options(cmd)
    mode = cmd.add_mutually_exclusive_group()
    mode.add_argument("--auto", action="store_true", help="one pass of initiator, worker and "
                      "cleaner over every table (for cron / Airflow)")
    mode.add_argument("--every", metavar="INTERVAL", help="keep running passes, e.g. 5m")
    cmd.add_argument("--kind", choices=["minor", "major"], default="major",
                     help="with TABLE: a minor compaction (deltas into one delta) or a major "
                     "one (into a new base)")
    cmd.add_argument("--partition", default=None, help="with TABLE: one partition, e.g. "
                     "dt=2024-01-01 (default: every partition)")
    cmd.add_argument("--engine", choices=["local", "spark"], default="local",
                     help="run the compaction in this process, or as Spark jobs")
    cmd.add_argument("--master", default="local[*]", help="Spark master for --engine spark")
    cmd.add_argument("--retention", type=float, default=RETENTION_SECONDS,
                     help="seconds the cleaner keeps what a compaction replaced (time travel)")
    cmd.add_argument("--passes", type=int, default=None, help=argparse.SUPPRESS)


def _spark(args: argparse.Namespace) -> SparkSession | None:
    if args.engine != "spark":
        return None
    import_optional("pyspark", "acidstore[spark]", "compact --engine spark")
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(args.master).appName("acidstore-compact")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _summary_printer(as_json: bool) -> Callable[[PassSummary], None]:
    """Print a pass's summary: text lines, or one JSON document per pass (one line each, so
    ``--every --json`` is a stream a log shipper can read)."""
    def show(summary: PassSummary) -> None:
        if as_json:
            print(json.dumps(jsonable({"queued": summary.queued, "ran": summary.ran,
                                       "cleaned": summary.cleaned,
                                       "seconds": summary.seconds})))
        else:
            print("\n".join(summary.lines()))
        sys.stdout.flush()

    return show


def _result_text(result: CompactionResult) -> str:
    lines = []
    for part in result.partitions:
        where = part.partition or "(table)"
        if part.outputs:
            lines.append(f"{where}: {len(part.inputs)} dirs -> {', '.join(part.outputs)} "
                         f"({part.rows} rows, {part.files} files)")
        else:
            lines.append(f"{where}: not compacted: {part.reason}")
    lines.append(f"compaction txn {result.txn_id}" if result.compacted
                 else "nothing was compacted")
    return "\n".join(lines)


def run_compact(args: argparse.Namespace) -> None:
    args.table = table_argument(args)
    if (args.table is not None) + bool(args.auto) + (args.every is not None) != 1:
        raise InvalidInputError("compact needs one of: a TABLE to compact now, --auto (one "
                                "scheduled pass) or --every INTERVAL (a scheduler)")
    wh = open_warehouse(args)
    spark = _spark(args)
    bar = ProgressBar()
    try:
        if args.table:
            table = handle(wh, args.table)
            label = f"{args.kind} {table.name}" + (f"/{args.partition}" if args.partition
                                                   else "")
            result = compact(table, args.kind, args.partition, args.engine, spark=spark,
                             progress=lambda done, total: bar(label, done, total))
            emit(args, {"table": result.table, "kind": result.kind, "txn_id": result.txn_id,
                        "partitions": result.partitions}, lambda: _result_text(result))
            return

        def one_pass() -> PassSummary:
            return run_once(wh, engine=args.engine, spark=spark,
                            retention_seconds=args.retention, report=bar)

        show = _summary_printer(args.json)
        if args.auto:
            show(one_pass())
            return
        interval = parse_interval(args.every)
        if interval <= 0:
            raise InvalidInputError("--every must be positive")
        run_every(interval, one_pass, passes=args.passes, on_pass=show)
    finally:
        wh.close()
