"""acidstore on Spark (layer L5): ``AcidTable`` and the ``acidstore`` data source.

Importing this package makes ``format("acidstore")`` available on the active SparkSession and
on every session ``SparkSession.builder.getOrCreate()`` returns afterwards, gives ``df.write``
Delta's default mode and ``partitionBy``/``bucketBy`` on a first write, and releases the
driver's snapshot leases when the session stops (``acidstore.spark.session``), and runs
``spark.sql`` (reads, INSERT, UPDATE, DELETE and MERGE) and ``spark.table`` on the tables
of the warehouse named by the session setting ``spark.acidstore.warehouse``
(``acidstore.spark.sql_dml``, ``acidstore.spark.sql_reads``).
``register(spark)`` registers the source on a session made some other way.
"""

from __future__ import annotations

from acidstore.errors import import_optional

# PySpark is an extra: say how to get it before a submodule fails on its import
import_optional("pyspark", "acidstore[spark]", "acidstore.spark")

from acidstore.spark.acid_table import AcidTable  # noqa: E402
from acidstore.spark.datasource import AcidDataSource  # noqa: E402
from acidstore.spark.merge_statement import AcidMergeBuilder  # noqa: E402
from acidstore.spark.session import install_hooks, register  # noqa: E402
from acidstore.spark.sql_dml import hook_sql  # noqa: E402
from acidstore.spark.sql_reads import hook_tables  # noqa: E402
from acidstore.spark.typed_errors import typed_error  # noqa: E402
from acidstore.spark.views import register_views  # noqa: E402

__all__ = ["AcidDataSource", "AcidMergeBuilder", "AcidTable", "register", "register_views",
           "typed_error"]

install_hooks()
hook_sql()
hook_tables()
