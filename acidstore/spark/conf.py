"""Spark session settings: the warehouse a session's SQL addresses by name, and a setting
changed for the length of a block, then put back as it was (unset when it was unset), so code
that must read with another setting leaves the user's alone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from acidstore.api.pairing import chosen_metastore
from acidstore.config import SPARK_METASTORE_CONF, SPARK_WAREHOUSE_CONF

__all__ = ["session_metastore", "session_warehouse", "temporary_conf"]


def session_warehouse(spark: SparkSession) -> str | None:
    """The warehouse whose tables the session's SQL names (``spark.acidstore.warehouse``)."""
    return spark.conf.get(SPARK_WAREHOUSE_CONF, None) or None


def session_metastore(spark: SparkSession) -> str | None:
    """Its metastore (``spark.acidstore.metastore``, else the environment's choice)."""
    return chosen_metastore(spark.conf.get(SPARK_METASTORE_CONF, None) or None)


@contextmanager
def temporary_conf(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """``key`` set to ``value`` inside the block, restored after it (also on an error)."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
