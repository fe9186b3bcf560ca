"""Helpers shared by the compaction tests: a small partitioned, bucketed table, exact reads
(with ROW__IDs, through ``to_arrow`` and both directory readers) and directory listings."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.format.directory import AcidState, acid_state
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore import SqliteMetastore

TABLE = "db.t"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("amount", pa.int64()), pa.field("dt", pa.string())])
Row = tuple[Any, ...]


def rows_of(items: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(items, schema=SCHEMA)


def make_rows(ids: range | list[int], dt: str | None = "a", name: str = "n") -> pa.Table:
    return rows_of([{"id": i, "name": f"{name}{i}", "amount": i * 10, "dt": dt} for i in ids])


def new_table(wh: Warehouse, name: str = TABLE, *, buckets: int = 2,
              properties: dict[str, str] | None = None, partitioned: bool = True) -> Table:
    schema = SCHEMA if partitioned else SCHEMA.remove(3)
    return wh.create_table(name, schema, partition_by=["dt"] if partitioned else [],
                           bucket_by=["id"], buckets=buckets, properties=properties or {})


def _tuples(table: pa.Table, names: list[str]) -> list[Row]:
    out = []
    for r in table.to_pylist():
        rid = r["row__id"]
        out.append(((rid["writeid"], rid["bucketid"], rid["rowid"]),
                    *(r[n] for n in names)))
    return sorted(out, key=lambda x: (x[1], x[0]))


def read_exact(t: Table) -> list[Row]:
    """The table's rows with ROW__IDs, ordered by id: ``to_arrow`` and both directory readers
    at the current snapshot must agree exactly."""
    names = list(handle_of(t).info.schema.names) + list(handle_of(t).info.partition_schema.names)
    got = _tuples(t.to_arrow(with_row_id=True), names)
    metastore = handle_of(t).core.metastore
    txns = metastore.valid_txns()
    write_ids = metastore.valid_write_ids(t.name, txns)
    for reader in ("vectorized", "merge"):
        direct = acidstore.read_directory(t.location, handle_of(t).info.schema, write_ids, txns,
                                          with_row_id=True, reader=reader)
        assert _tuples(direct, names) == got, reader
    return got


def values(rows: list[Row]) -> list[Row]:
    """``read_exact`` rows without their ROW__IDs."""
    return [r[1:] for r in rows]


def children(directory: str | Path) -> list[str]:
    """The ACID directories (and files) of a partition, hidden ones left out."""
    if not os.path.isdir(directory):
        return []
    return sorted(n for n in os.listdir(directory) if not n.startswith(("_", ".")))


def state_of(t: Table, partition: str = "dt=a") -> AcidState:
    """The partition's directory selection at the current snapshot."""
    metastore = handle_of(t).core.metastore
    txns = metastore.valid_txns()
    return acid_state(os.path.join(t.location, partition),
                      metastore.valid_write_ids(t.name, txns), txns)


def aborted_write(wh: Warehouse, name: str, data: pa.Table | None = None,
                  delete: str | None = None) -> int | None:
    """A write whose transaction is aborted in the metastore while its files stay on disk (as
    when its process dies); returns its write id (None: a delete that matched nothing)."""
    txn = wh.transaction()
    bound = txn.table(name)
    result = bound.insert(data) if data is not None else bound.delete(delete or "TRUE")
    wh.metastore.abort(txn.txn_id, "test: aborted, files left behind")
    txn._core._stop_heartbeat()  # the test's own handle: no more heartbeats of a dead txn
    return result.write_id


def txn_states(wh: Warehouse) -> dict[int, str]:
    shown = wh.show_transactions()
    return dict(zip(shown.column("txn_id").to_pylist(), shown.column("state").to_pylist(),
                    strict=True))


def compactions(wh: Warehouse) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = wh.show_compactions().to_pylist()
    return rows


class CleanBeforeLease(SqliteMetastore):
    """A real SQLite metastore that, once ``armed``, runs a commit (a compaction, an
    overwrite) and the cleaner in the moment between a reader's snapshot and its lease (as
    another process can)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.armed: Callable[[], None] | None = None

    def acquire_lease(self, table: str, snapshot: ValidTxnList, write_ids: ValidWriteIdList,
                      ttl_seconds: float) -> int:
        interleave, self.armed = self.armed, None
        if interleave is not None:
            interleave()
        return super().acquire_lease(table, snapshot, write_ids, ttl_seconds)
