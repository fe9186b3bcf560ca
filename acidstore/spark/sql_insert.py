"""``INSERT INTO`` / ``INSERT OVERWRITE`` a warehouse table by name, in ``spark.sql``.

Spark plans the statement's query (its reads of warehouse tables already routed by
``acidstore.spark.sql_reads``); its rows are then written by ``AcidTable.insert``, the same
transaction and checks as the helper's. Spark's rules for an INSERT into a table decide which
column each value fills, and are applied here before the write:

- by position (the default): the query's columns fill the table's columns in order (user
  columns, then partition columns), less those a ``PARTITION (p = 'v')`` clause fixes; with
  a column list ``(a, b)`` they fill the listed columns, and the nullable columns left out
  are NULL. Values are cast to the columns' types as Spark's store assignment casts them.
- ``BY NAME``: by the query's column names (any case); ``WITH SCHEMA EVOLUTION`` adds the
  names the table lacks, as ``mergeSchema`` does.
- ``INSERT OVERWRITE`` follows ``spark.sql.sources.partitionOverwriteMode``: ``dynamic``
  replaces the partitions the rows fall in; ``static`` (Spark's default) replaces the whole
  table, or with every partition column fixed by ``PARTITION (...)`` that one partition
  (emptied when the query returns no row, as Spark empties it). A partly fixed partition in
  static mode and ``REPLACE WHERE`` / ``REPLACE USING`` are refused by name.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from pyspark.sql.types import StructField

from acidstore.engine.results import WriteResult
from acidstore.errors import SchemaMismatchError, UnsupportedOperationError
from acidstore.spark.acid_table import AcidTable
from acidstore.spark.schema_mapping import spark_schema
from acidstore.spark.sql_reads import seq

__all__ = ["run_insert"]

_OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"


def _layout(table: AcidTable) -> tuple[pa.Schema, list[str]]:
    """The table's columns (as reads return them) and its partition columns."""
    with table._table() as handle:
        return handle.schema, list(handle.info.partition_schema.names)


def _fixed_value(field: StructField, value: str) -> Column:
    """A ``PARTITION (p = 'v')`` value as the column's type."""
    return F.lit(value).cast(field.dataType)


def _static(plan: Any) -> dict[str, str | None]:
    """``PARTITION (...)``: column -> its fixed value (None: named but not fixed)."""
    spec = plan.partitionSpec()
    keys = seq(spec.keys().toSeq())
    return {str(k).lower(): (None if not spec.apply(k).isDefined() else str(spec.apply(k).get()))
            for k in keys}


def _data(spark: SparkSession, plan: Any, types: dict[str, StructField],
          static: dict[str, str | None], where: str) -> DataFrame:
    """The query's rows, its columns renamed and cast to the table's columns they fill
    (``types``: the table's Spark fields, in order, by lower-case name)."""
    names = [f.name for f in types.values()]
    unknown = [c for c in static if c not in types]
    if unknown:
        raise SchemaMismatchError(f"{where}: PARTITION names {unknown}, which are not columns "
                                  f"of the table ({names})")
    jvm = spark._jvm
    assert jvm is not None  # a classic session's gateway
    query = DataFrame(jvm.org.apache.spark.sql.classic.Dataset.ofRows(
        spark._jsparkSession, plan.query()), spark)
    given = query.columns
    fixed = {c: v for c, v in static.items() if v is not None}
    if plan.byName():
        targets = given
    else:
        listed = [str(c) for c in seq(plan.userSpecifiedCols())]
        targets = listed or [n for n in names if n.lower() not in fixed]
        if len(targets) != len(given):
            raise SchemaMismatchError(
                f"{where}: the query has {len(given)} column(s) {given} for the "
                f"{len(targets)} column(s) {targets} it fills by position")
    columns = []
    for source, target in zip(given, targets, strict=True):
        value = F.col("`" + source.replace("`", "``") + "`")
        field = types.get(target.lower())  # unknown: the insert's check names it
        columns.append(value.alias(target) if field is None
                       else value.cast(field.dataType).alias(field.name))
    columns.extend(_fixed_value(types[c], v).alias(types[c].name) for c, v in fixed.items())
    return query.select(*columns)


def _one_partition(spark: SparkSession, partitions: list[str], static: dict[str, str | None],
                   where: str) -> bool | None:
    """How an INSERT OVERWRITE replaces: None for the whole table (static mode), False for
    the partitions its rows fall in (dynamic mode), True for the one partition ``PARTITION
    (...)`` fixes in static mode (emptied if no row falls in it)."""
    dynamic = str(spark.conf.get(_OVERWRITE_MODE, "static")).lower() == "dynamic"
    if dynamic and partitions:
        return False
    if not partitions or not static:
        return None
    if any(static.get(p.lower()) is None for p in partitions):
        raise UnsupportedOperationError(
            f"{where}: INSERT OVERWRITE with some partition columns not fixed by PARTITION "
            f"(...) in static overwrite mode is not supported; fix every partition column "
            f"{partitions}, or set {_OVERWRITE_MODE}=dynamic")
    return True


def run_insert(spark: SparkSession, table: AcidTable, plan: Any) -> WriteResult:
    """Run the parsed ``InsertIntoStatement`` ``plan`` into ``table``."""
    where = f"INSERT into {table.name}"
    if plan.replaceCriteriaOpt().isDefined():
        raise UnsupportedOperationError(
            f"{where}: INSERT ... REPLACE WHERE / REPLACE USING is not supported on acidstore "
            "tables; run a DELETE and an INSERT, or a MERGE")
    schema, partitions = _layout(table)
    types = {f.name.lower(): f for f in spark_schema(schema).fields}
    static = _static(plan)
    data = _data(spark, plan, types, static, where)
    if not plan.overwrite():
        return table.insert(data, merge_schema=bool(plan.withSchemaEvolution()))
    one = _one_partition(spark, partitions, static, where)
    result = table.insert(data, overwrite=True, merge_schema=bool(plan.withSchemaEvolution()),
                          partition_overwrite_mode="static" if one is None else "dynamic")
    if one and result.rows_inserted == 0:  # Spark empties the partition it names
        condition = F.lit(True)
        for column, value in static.items():
            assert value is not None  # one partition: every column fixed
            condition = condition & (F.col(types[column].name)
                                     == _fixed_value(types[column], value))
        return table.delete(condition)
    return result
