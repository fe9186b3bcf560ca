"""``SqlCatalog``: the catalogue calls of the SQL metastores, and the warehouse they serve.

Tables, partitions and original files (each call one metastore transaction run by the
backend's ``_write`` / ``_read``, holding the ``catalog`` lock on PostgreSQL), and the binding
to one warehouse (``sql_binding``; ``acidstore.api.pairing`` decides): a table is created or
dropped only while the store still serves the warehouse this client paired it with. Split
from ``sql_store``, which adds the transactions and the commit log on top.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence

import pyarrow as pa

from acidstore.errors import TableExistsError
from acidstore.metastore.records import NewTable, OriginalFile, TableInfo, WarehouseBinding
from acidstore.metastore.sql import Session
from acidstore.metastore.sql_base import SqlBase
from acidstore.metastore.sql_binding import read_binding, require_binding, write_binding
from acidstore.metastore.sql_rename import owner_of, refuse_shared_location, rename_row
from acidstore.metastore.sql_schema import encode_schema
from acidstore.metastore.validate import (
    check_new_table,
    check_original,
    check_partition,
    narrowed_schema,
    renamed_schema,
    split_table_name,
    widened_schema,
)

__all__ = ["SqlCatalog"]


class SqlCatalog(SqlBase):
    """The ``Catalog`` role's calls (the catalogue and the warehouse binding), over
    ``_write`` / ``_read``."""

    #: the binding this client paired the store with, and the warehouse root it stands for
    #: (``bind_warehouse``); None until then
    _paired: tuple[WarehouseBinding, str] | None = None

    # --- the warehouse served -------------------------------------------------------------------

    def warehouse_binding(self) -> WarehouseBinding | None:
        return self._read(read_binding)

    def bind_warehouse(self, binding: WarehouseBinding, *, replacing: WarehouseBinding | None,
                       warehouse: str) -> WarehouseBinding | None:
        """See the protocol: a compare-and-set, under the ``catalog`` lock on PostgreSQL (the
        database write lock on SQLite), so of two clients binding a new store at once one
        wins and the other is told; a binding already in place is only read (a read-only
        store can be paired too)."""
        def body(conn: Session, _now: int) -> WarehouseBinding | None:
            found = read_binding(conn)
            if found != replacing:
                return found
            write_binding(conn, binding)
            return binding

        found = self.warehouse_binding()
        if found != binding:
            found = self._write(body, locks=("catalog",)) if found == replacing else found
        if found == binding:
            self._paired = (binding, warehouse)
        return found

    # --- catalogue ---------------------------------------------------------------------------

    def create_table(self, info_without_id: NewTable) -> TableInfo:
        info = info_without_id
        check_new_table(info)

        def body(conn: Session, now: int) -> TableInfo:
            require_binding(conn, self._paired, self.url)
            if conn.execute("SELECT 1 FROM tables WHERE db_name = ? AND name = ?",
                            (info.database, info.name)).fetchone() is not None:
                raise TableExistsError(f"table {info.full_name} already exists")
            refuse_shared_location(conn, info)
            conn.execute("INSERT INTO databases (name, created) VALUES (?, ?) "
                         "ON CONFLICT DO NOTHING", (info.database, now))
            cursor = conn.execute(
                "INSERT INTO tables (db_name, name, schema, partition_schema, bucket_by, "
                "buckets, properties, location, created, originals_recorded) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1) RETURNING table_id",
                (info.database, info.name, encode_schema(info.schema),
                 encode_schema(info.partition_schema), json.dumps(list(info.bucket_by)),
                 info.buckets, json.dumps(info.properties, sort_keys=True), info.location, now))
            row = conn.execute("SELECT * FROM tables WHERE table_id = ?",
                               (cursor.fetchone()[0],)).fetchone()
            return self._table_info(row)

        return self._write(body, locks=("catalog",))

    def get_table(self, name: str) -> TableInfo:
        return self._read(lambda conn: self._table_info(self._table_row(conn, name)))

    def table_at(self, location: str) -> str | None:
        return self._read(lambda conn: owner_of(conn, location))

    def rename_table(self, old: str, new: str) -> TableInfo:
        database, name = split_table_name(new)  # a bad new name is refused before anything

        def body(conn: Session, now: int) -> TableInfo:
            # never another warehouse's entry: the store must still serve ours
            require_binding(conn, self._paired, self.url)
            row = self._table_row(conn, old)
            rename_row(conn, row, database, name, now)
            return self._table_info(conn.execute("SELECT * FROM tables WHERE table_id = ?",
                                                 (row["table_id"],)).fetchone())

        # "commit" too, as add_columns: a commit's metadata check and this never interleave
        return self._write(body, locks=("catalog", "commit"))

    def list_tables(self, database: str | None = None) -> list[str]:
        def body(conn: Session) -> list[str]:
            if database is None:
                rows = conn.execute("SELECT db_name, name FROM tables")
            else:
                rows = conn.execute("SELECT db_name, name FROM tables WHERE db_name = ?",
                                    (database.lower(),))
            return sorted(f"{db}.{table}" for db, table in rows)

        return self._read(body)

    def drop_table(self, name: str) -> TableInfo:
        # The table's reader leases stay until they expire: they name its id, which no new
        # table gets, and only lease calls may hold a lease row (a release never waits).
        def body(conn: Session, _now: int) -> TableInfo:
            # never another warehouse's entry: the store must still serve ours
            require_binding(conn, self._paired, self.url)
            row = self._table_row(conn, name)
            for statement in ("DELETE FROM partitions WHERE table_id = ?",
                              "DELETE FROM app_versions WHERE table_id = ?",
                              "DELETE FROM original_files WHERE table_id = ?",
                              "DELETE FROM tables WHERE table_id = ?"):
                conn.execute(statement, (row["table_id"],))
            return self._table_info(row)

        return self._write(body, locks=("catalog",))

    def add_columns(self, table: str, columns: pa.Schema) -> TableInfo:
        return self._change_schema(
            table, lambda info: (widened_schema(info, columns), info.bucket_by))

    def rename_column(self, table: str, old: str, new: str) -> TableInfo:
        return self._change_schema(table, lambda info: renamed_schema(info, old, new))

    def drop_columns(self, table: str, names: Sequence[str]) -> TableInfo:
        return self._change_schema(
            table, lambda info: (narrowed_schema(info, names), info.bucket_by))

    def _change_schema(self, table: str,
                       change: Callable[[TableInfo], tuple[pa.Schema, tuple[str, ...]]]
                       ) -> TableInfo:
        """Store the file schema and bucketing columns ``change`` makes of the table's, and
        bump its ``metadata_version``, in one metastore transaction."""
        def body(conn: Session, _now: int) -> TableInfo:
            row = self._table_row(conn, table)
            schema, bucket_by = change(self._table_info(row))
            conn.execute("UPDATE tables SET schema = ?, bucket_by = ?, "
                         "metadata_version = metadata_version + 1 WHERE table_id = ?",
                         (encode_schema(schema), json.dumps(list(bucket_by)),
                          row["table_id"]))
            return self._table_info(conn.execute("SELECT * FROM tables WHERE table_id = ?",
                                                 (row["table_id"],)).fetchone())

        # "commit" too: a commit's metadata check and this change never interleave
        return self._write(body, locks=("catalog", "commit"))

    def add_partitions(self, table: str, partitions: Iterable[str]) -> None:
        wanted = list(partitions)

        def body(conn: Session, _now: int) -> None:
            row = self._table_row(conn, table)
            info = self._table_info(row)
            columns = [c.lower() for c in info.partition_schema.names]
            for partition in wanted:
                check_partition(partition, columns, info.full_name)
            conn.executemany("INSERT INTO partitions (table_id, part) VALUES (?, ?) "
                             "ON CONFLICT DO NOTHING", [(row["table_id"], p) for p in wanted])

        self._write(body, locks=("catalog",))

    def list_partitions(self, table: str) -> list[str]:
        def body(conn: Session) -> list[str]:
            table_id = self._table_row(conn, table)["table_id"]
            return [r[0] for r in conn.execute(
                "SELECT part FROM partitions WHERE table_id = ? ORDER BY part", (table_id,))]

        return self._read(body)

    def record_originals(self, table: str, files: Iterable[OriginalFile]) -> None:
        wanted = list(files)

        def body(conn: Session, _now: int) -> None:
            row = self._table_row(conn, table)
            info = self._table_info(row)
            columns = [c.lower() for c in info.partition_schema.names]
            for original in wanted:
                check_original(original, columns, info.full_name)
            conn.executemany(
                "INSERT INTO original_files (table_id, part, name, bytes) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (table_id, part, name) DO UPDATE SET bytes = excluded.bytes",
                [(row["table_id"], o.partition, o.name, o.bytes) for o in wanted])
            # their partitions are the table's as a commit's are: a partition directory
            # removed as a whole is then visited (and its originals missed), not unknown
            conn.executemany("INSERT INTO partitions (table_id, part) VALUES (?, ?) "
                             "ON CONFLICT DO NOTHING",
                             sorted({(row["table_id"], o.partition) for o in wanted
                                     if o.partition}))

        if wanted:
            self._write(body, locks=("catalog",))

    def original_files(self, table: str) -> list[OriginalFile]:
        def body(conn: Session) -> list[OriginalFile]:
            table_id = self._table_row(conn, table)["table_id"]
            return [OriginalFile(r["part"], r["name"], r["bytes"]) for r in conn.execute(
                "SELECT part, name, bytes FROM original_files WHERE table_id = ? "
                "ORDER BY part, name", (table_id,))]

        return self._read(body)

