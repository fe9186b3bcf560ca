"""Finding the table a Spark read or write names, from data source options alone.

Everything Spark hands a Python data source is a string option, and the driver-side worker
that plans the read or write is a fresh process: it reconnects to the warehouse from these
options. A table is named either as ``db.table`` plus the ``warehouse`` option, or by the path
of its directory (``forPath``), whose warehouse is found by walking up to the metastore file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from acidstore.api.connect import connect
from acidstore.api.pairing import DEFAULT_METASTORE_FILE, MARKER_FILE, chosen_metastore
from acidstore.api.warehouse import Warehouse
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.errors import (
    InvalidInputError,
    MetastoreError,
    TableNotFoundError,
    TransactionAbortedError,
    TransactionStateError,
    WarehouseNotFoundError,
)
from acidstore.io.fs import resolve
from acidstore.metastore.task_guard import permit_in_task

__all__ = ["Target", "heartbeat", "open_target", "table_path", "target_of"]


@dataclass(frozen=True)
class Target:
    """Where a table is: a warehouse plus a name, or a table directory."""

    warehouse: str | None
    metastore: str | None
    name: str | None
    path: str | None

    def options(self) -> dict[str, str]:
        """The data source options that name this table again."""
        out = {k: v for k, v in (("warehouse", self.warehouse), ("metastore", self.metastore))
               if v is not None}
        out["path"] = self.name if self.name is not None else str(self.path)
        return out

    def describe(self) -> str:
        return self.name if self.name is not None else f"the table at {self.path}"


def _looks_like_name(value: str) -> bool:
    return "/" not in value and "\\" not in value and value.count(".") <= 1


def target_of(options: Mapping[str, str]) -> Target:
    """The table named by ``load(x)``/``save(x)`` (the ``path`` option) or ``table``."""
    value = options.get("table") or options.get("path")
    if not value:
        raise InvalidInputError(
            "name the acidstore table: .load('db.table') with .option('warehouse', ...), or "
            "the table's directory path")
    warehouse = options.get("warehouse")
    # resolved here, in the driver, so the tasks get it as an option (their environment
    # need not have ACIDSTORE_METASTORE)
    metastore = chosen_metastore(options.get("metastore"))
    if warehouse is not None and _looks_like_name(value):
        return Target(warehouse, metastore, value, None)
    if _looks_like_name(value) and not Path(value).exists():
        raise InvalidInputError(
            f"table {value!r} needs the warehouse option: "
            f".option('warehouse', '/path/to/warehouse')")
    return Target(warehouse, metastore, None, table_path(value))


def table_path(path: str) -> str:
    """A local path made absolute (Spark's Python workers may not share our cwd); a URI
    (``s3://bucket/wh/db.db/t``) as it is."""
    return path if "://" in path else str(Path(path).absolute())


def _find_warehouse(path: Path) -> Path:
    """The nearest directory at or above ``path`` holding a warehouse's SQLite metastore or
    its marker (a warehouse whose metastore is elsewhere)."""
    for candidate in [path, *path.parents]:
        if (candidate / DEFAULT_METASTORE_FILE).is_file() or (
                candidate / MARKER_FILE).is_file():
            return candidate
    raise TableNotFoundError(
        f"no acidstore warehouse above {path}: no {DEFAULT_METASTORE_FILE} or {MARKER_FILE} "
        "in it or its parents")


def open_target(target: Target) -> tuple[Warehouse, TableHandle]:
    """Connect to the target's warehouse and look its table up (TableNotFoundError if none).

    Nothing is ever created: a table must exist, so a ``warehouse`` or ``metastore`` option
    that names nothing is a WarehouseNotFoundError, not a new empty warehouse (or metastore
    file) left behind by a failed read.
    """
    if target.name is not None:
        assert target.warehouse is not None
        wh = connect(target.warehouse, metastore=target.metastore, create=False)
        try:
            return wh, TableHandle.open(core_of(wh), target.name)
        except BaseException:
            wh.close()
            raise
    assert target.path is not None
    if "://" in target.path:
        return _open_remote(target, target.path)
    path = Path(target.path)
    root = Path(target.warehouse) if target.warehouse else _find_warehouse(path)
    wh = connect(root, metastore=target.metastore, create=False)
    wanted = str(path.resolve())
    for name in wh.tables():
        table = TableHandle.open(core_of(wh), name)
        if str(Path(table.location).resolve()) == wanted:
            return wh, table
    wh.close()
    raise TableNotFoundError(f"no acidstore table is located at {path} (warehouse {root})")


def _open_remote(target: Target, uri: str) -> tuple[Warehouse, TableHandle]:
    """The table at a URI (``s3://bucket/wh/db.db/t``): its warehouse cannot be found by
    walking up to a metastore file (object storage holds none), so it is named."""
    if target.warehouse is None or target.metastore is None:
        raise InvalidInputError(
            f"the table at {uri} needs the warehouse and metastore options (a warehouse on "
            "object storage keeps its catalogue in the metastore, not beside its tables)")
    wh = connect(target.warehouse, metastore=target.metastore, create=False)
    try:
        _, wanted = resolve(uri, wh.filesystem)
    except BaseException:
        wh.close()
        raise
    for name in wh.tables():
        table = TableHandle.open(core_of(wh), name)
        if table.location == wanted:
            return wh, table
    wh.close()
    raise TableNotFoundError(f"no acidstore table is located at {uri} "
                             f"(warehouse {target.warehouse})")


def heartbeat(target: Target, txn_id: int) -> None:
    """Keep a transaction alive from an executor, when the executor can reach the metastore.

    A ``df.write`` transaction may have no long-lived driver process to heartbeat it (Spark
    plans and commits in short-lived workers; only ``save()`` through acidstore's hook
    keeps it alive from the user's driver), so its tasks do. An executor that cannot see the
    metastore (a SQLite file on the driver's disk) skips this rather than creating a new one.
    A transaction that is no longer open fails the task: its files could never be published.
    One of the two places a task may open the metastore (``permit_in_task``; the other is a
    read task's lease, ``spark/leases.py``); anywhere else
    in a task, opening one raises ``MetastoreInTaskError``.
    """
    if target.metastore is None:
        root = Path(target.warehouse) if target.warehouse else None
        if root is None and target.path is not None:
            try:
                root = _find_warehouse(Path(target.path))
            except TableNotFoundError:
                return
        if root is None or not (root / DEFAULT_METASTORE_FILE).is_file():
            return
    with permit_in_task("the heartbeat of a df.write transaction"):
        try:
            wh = connect(target.warehouse or str(root), metastore=target.metastore,
                         create=False)
        except (MetastoreError, WarehouseNotFoundError, OSError):
            return
        try:
            wh.metastore.heartbeat(txn_id)
        except (TransactionAbortedError, TransactionStateError):
            raise
        except (MetastoreError, OSError):
            return
        finally:
            wh.close()
