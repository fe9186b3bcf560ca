"""``format("acidstore")`` on every SparkSession, with nothing imported.

Spark looks, the first time a session needs a Python data source, for installed top-level
modules named ``pyspark_*`` with a ``DefaultSource`` and registers each under its ``name()``.
This module is that entry point. It works where Python's module listing sees it: a regular
install and a directory on ``PYTHONPATH``; an editable install (``pip install -e``) hides it
from that listing, and there importing ``acidstore.spark`` registers the source on the
sessions it creates (README, "Quickstart: Spark").
"""

from __future__ import annotations

from acidstore.spark.datasource import AcidDataSource as DefaultSource

__all__ = ["DefaultSource"]
