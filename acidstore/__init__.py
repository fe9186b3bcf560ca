"""acidstore: Hive full-ACID transactional tables for Python and PySpark.

The package root is the public facade; the library layers below it never import it.
"""

from __future__ import annotations

from acidstore.api.table import Table, WriteResult
from acidstore.api.warehouse import Warehouse, connect
from acidstore.engine.transaction import Transaction
from acidstore.read.hive_directory import read_directory, scan_directory

__all__ = ["Table", "Transaction", "Warehouse", "WriteResult", "connect", "read_directory",
           "scan_directory"]
__version__ = "0.1.0"
