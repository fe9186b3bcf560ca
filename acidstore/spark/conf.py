"""A Spark session setting changed for the length of a block, then put back as it was (unset
when it was unset), so code that must read with another setting leaves the user's alone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

__all__ = ["temporary_conf"]


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
