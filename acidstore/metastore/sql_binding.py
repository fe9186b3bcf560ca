"""The warehouse a SQL metastore serves, as two rows of ``meta`` (schema version 13).

A metastore holds the catalogue of exactly one warehouse: its table locations are relative to
that warehouse's root, so a second warehouse pointed at the same store would list the first
one's tables under its own root (reads then miss every file) and ``drop_table`` would remove
the first one's entries. So the store records the root it serves and an id the warehouse
records too (``acidstore.api.pairing`` decides what to record and compares; this module only
stores). Functions over one ``Session`` inside the caller's metastore transaction.
"""

from __future__ import annotations

from acidstore.errors import MetastoreMismatchError
from acidstore.metastore.records import WarehouseBinding
from acidstore.metastore.sql import Session

__all__ = ["read_binding", "require_binding", "write_binding"]

_ROOT, _ID = "warehouse_root", "warehouse_id"


def read_binding(conn: Session) -> WarehouseBinding | None:
    """The recorded binding, or None for a store no warehouse has bound yet."""
    rows = dict(conn.execute("SELECT name, value FROM meta WHERE name IN (?, ?)",
                             (_ROOT, _ID)).fetchall())
    if _ROOT not in rows or _ID not in rows:
        return None
    return WarehouseBinding(str(rows[_ROOT]), str(rows[_ID]))


def write_binding(conn: Session, binding: WarehouseBinding) -> None:
    """Record ``binding`` (both rows, in the caller's transaction)."""
    conn.executemany("INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) "
                     "DO UPDATE SET value = excluded.value",
                     [(_ROOT, binding.root), (_ID, binding.pairing_id)])


def require_binding(conn: Session, expected: tuple[WarehouseBinding, str] | None,
                    where: str) -> None:
    """Refuse a catalogue change (create or drop a table) when the store no longer holds the
    binding this client paired it with (``expected``: the binding and the warehouse root it
    stands for), because another client relocated it since: the change would land in
    another warehouse's catalogue. None: never paired (a store used without a warehouse, as
    tests and tools do), nothing to check."""
    if expected is None:
        return
    binding, warehouse = expected
    found = read_binding(conn)
    if found != binding:
        serves = "no warehouse" if found is None else found.root
        raise MetastoreMismatchError(
            f"the metastore {where} no longer serves the warehouse {warehouse} this client "
            f"opened (it records {serves} now: relocated since); nothing was changed, "
            "connect again", warehouse=warehouse, metastore=where, expected=serves)
