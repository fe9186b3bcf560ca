"""acidstore: Hive full-ACID transactional tables for Python and PySpark, no JVM metastore.

A warehouse is a directory of tables in Hive's ACID layout (``base_N``, ``delta_x_y``,
``delete_delta_x_y`` directories of ORC bucket files) and a metastore that hands out
transaction and write ids: an embedded SQLite file, or PostgreSQL shared by many machines.

    import acidstore, pyarrow as pa
    wh = acidstore.connect("warehouse")              # SQLite metastore inside it
    t = wh.create_table("db.events", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.insert(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.update("id = 2", {"v": "'c'"}); t.delete("id = 1")
    t.to_arrow(); t.to_arrow(as_of=1); t.history()
    t.restore(1)                                    # the rows of write id 1, a new commit
    with wh.transaction() as txn:                   # several statements, one commit
        txn.table("db.events").insert(pa.table({"id": [3], "v": ["d"]}))

``Warehouse``, ``Table`` and ``Transaction`` are the embedded API; ``acidstore.spark`` holds
``AcidTable`` and the ``acidstore`` Spark data source; ``compaction`` compacts and cleans;
``acidstore.errors`` is the one exception hierarchy; ``read_directory`` reads any Hive ACID
directory without a metastore. The ``acidstore`` command operates a warehouse from a shell.
"""

from __future__ import annotations

from acidstore.api.connect import connect
from acidstore.api.table import Table, WriteResult
from acidstore.api.warehouse import Transaction, Warehouse
from acidstore.read.hive_directory import read_directory, scan_directory

__all__ = ["Table", "Transaction", "Warehouse", "WriteResult", "connect", "read_directory",
           "scan_directory"]
__version__ = "0.1.0"
