"""A writer process for ``test_record_memory`` (imported by its ``spawn`` child): it runs
the commands the test sends, one at a time, on its own warehouse connection, and answers
each with ``("ok", command)`` or ``("error", traceback)``."""

from __future__ import annotations

import traceback
from typing import Any

import pyarrow as pa

import acidstore
from compaction import Cleaner, compact

TABLE = "db.t"
SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def rows(ids: list[int], dt: str = "a") -> pa.Table:
    return pa.table({"id": ids, "dt": [dt] * len(ids)}, schema=SCHEMA)


def _run(wh: acidstore.Warehouse, command: str, held: dict[str, Any], key: int) -> None:
    table = wh.table(TABLE)
    if command == "insert":
        table.insert(rows([key], "a" if key % 2 else "b"))
    elif command == "update":
        table.update(f"id = {key}", {"id": str(key + 1000)})
    elif command == "delete":
        table.delete(f"id = {key}")
    elif command == "abort":
        try:
            with wh.transaction() as txn:
                txn.table(TABLE).insert(rows([key]))
                raise RuntimeError("abort on purpose")
        except RuntimeError:
            pass
    elif command == "hold":  # a write id allocated now, committed after later ones
        txn = wh.transaction()
        txn.table(TABLE).insert(rows([key], "b"))
        held["txn"] = txn
    elif command == "release":
        held.pop("txn").commit()
    elif command == "major":
        for partition in ("dt=a", "dt=b"):
            compact(table, "major", partition)
    elif command == "clean":
        Cleaner(wh, retention_seconds=0).run()
    elif command == "recreate":
        wh.drop_table(TABLE)
        wh.create_table(TABLE, SCHEMA, partition_by=["dt"]).insert(rows([key]))
    else:
        raise ValueError(command)


def writer(root: str, commands: Any, answers: Any) -> None:
    """Run commands until ``None``."""
    wh = acidstore.connect(root)
    held: dict[str, Any] = {}
    key = 100
    while (command := commands.get()) is not None:
        key += 1
        try:
            _run(wh, command, held, key)
            answers.put(("ok", command))
        except Exception:
            answers.put(("error", traceback.format_exc()))
    wh.close()
