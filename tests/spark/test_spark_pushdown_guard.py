"""Why ``format("acidstore")`` takes no filters through ``DataSourceReader.pushFilters``.

PySpark (4.1+) lets a Python data source accept filters, but the reader it hands those filters
to is kept with the DataFrame's plan: a later query on the same DataFrame that has no filter
of its own (a ``select``, a ``count``) reads with the filters a previous query pushed. A
snapshot reader that drops rows by pushed filters would then return wrong results, so
acidstore prunes only through its explicit ``filter`` option. This test pins that PySpark
behaviour on a toy source: when it fails, PySpark has fixed it and ``pushFilters`` can be
implemented (README, "No automatic pushdown").
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark import cloudpickle
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    Filter,
    GreaterThan,
    InputPartition,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"
# Spark's Python workers cannot import this test module: ship the toy source by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


class _PushingReader(DataSourceReader):
    """Rows 0..9 of ``a``; drops rows by a pushed ``a > n`` (as a real source would)."""

    def __init__(self) -> None:
        self.lower = -1

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        for f in filters:
            if isinstance(f, GreaterThan) and f.attribute == ("a",):
                self.lower = max(self.lower, int(f.value))
            else:
                yield f

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        for i in range(10):
            if i > self.lower:
                yield (i,)


class _PushingSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "acidstore_pushdown_guard"

    def schema(self) -> str:
        return "a int"

    def reader(self, schema: Any) -> DataSourceReader:
        return _PushingReader()


def test_pyspark_still_reuses_pushed_filters(spark: SparkSession) -> None:
    before = spark.conf.get(PUSHDOWN, "false") or "false"
    spark.conf.set(PUSHDOWN, "true")
    try:
        spark.dataSource.register(_PushingSource)
        df = spark.read.format(_PushingSource.name()).load()
        assert [r.a for r in df.filter("a > 6").collect()] == [7, 8, 9]
        unfiltered = [r.a for r in df.select("a").collect()]
    finally:
        spark.conf.set(PUSHDOWN, before)
    assert unfiltered == [7, 8, 9], (
        "PySpark no longer reuses a previous query's pushed filters (a select returned "
        f"{unfiltered}): acidstore's reader can now take filters through pushFilters")
