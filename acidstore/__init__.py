"""acidstore: Hive full-ACID transactional tables for Python and PySpark.

The package root is the public facade; the library layers below it never import it.
"""

from __future__ import annotations

from acidstore.read.api import read_directory, scan_directory
from acidstore.table import Table, WriteResult
from acidstore.transaction import Transaction
from acidstore.warehouse import Warehouse, connect

__all__ = ["Table", "Transaction", "Warehouse", "WriteResult", "connect", "read_directory",
           "scan_directory"]
__version__ = "0.1.0"
