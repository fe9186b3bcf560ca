"""acidstore on Spark (layer L5): ``AcidTable`` and the ``acidstore`` data source.

Importing this module registers ``format("acidstore")`` on the active SparkSession, if there
is one; ``AcidTable.forName`` / ``forPath`` register it on the session they are given.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from acidstore.spark.merge import AcidMergeBuilder
from acidstore.spark.source import AcidDataSource, register
from acidstore.spark.table import AcidTable

__all__ = ["AcidDataSource", "AcidMergeBuilder", "AcidTable", "register"]

_active = SparkSession.getActiveSession()
if _active is not None:
    register(_active)
