"""``spark.sql`` on the tables of a warehouse, by name: reads, INSERT, UPDATE, DELETE, MERGE.

PySpark 4.3 cannot put a warehouse table in Spark's catalog (``acidstore.spark.views`` says
why), so Spark alone would answer ``UPDATE hr.emp ...`` with TABLE_OR_VIEW_NOT_FOUND. With
the session setting ``spark.acidstore.warehouse`` (and ``spark.acidstore.metastore`` for a
shared metastore), ``import acidstore.spark`` makes ``SparkSession.sql`` parse the text first
with Spark's own parser, in the driver (no analysis, no job). Reads of the warehouse's
``db.table`` names, time travel included, become reads of the ``acidstore`` source
(``acidstore.spark.sql_reads``). An INSERT (``acidstore.spark.sql_insert``), UPDATE, DELETE
FROM or MERGE INTO whose target is such a table runs through ``AcidTable`` (the same
transaction, conflict rules and errors), its expressions printed as the statement core's SQL
(``acidstore.spark.spark_text``) and a MERGE's source planned by Spark. Every other statement,
and DML on any other name, is Spark's, unchanged. A write returns a one-row DataFrame of
counts, as Delta's DML does (``RESULT_SCHEMA``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.sql_formatter import SQLStringFormatter

from acidstore.engine.results import WriteResult
from acidstore.errors import UnsupportedOperationError
from acidstore.spark.acid_table import AcidTable
from acidstore.spark.conf import session_metastore, session_warehouse
from acidstore.spark.merge_statement import AcidMergeBuilder
from acidstore.spark.spark_text import expression_text
from acidstore.spark.sql_insert import run_insert
from acidstore.spark.sql_reads import routed_reads, seq, warehouse_table

__all__ = ["RESULT_SCHEMA", "hook_sql", "run_statement"]

#: the one row a statement returns (Delta's column names; UPDATE and DELETE fill the counts
#: of their kind, the others are 0)
RESULT_SCHEMA = ("num_affected_rows bigint, num_updated_rows bigint, "
                 "num_deleted_rows bigint, num_inserted_rows bigint")
_WRITES = frozenset({"UpdateTable", "DeleteFromTable", "MergeIntoTable",
                     "InsertIntoStatement"})
_MARK = "__acidstore_sql_hook__"


def hook_sql() -> None:
    """Wrap ``SparkSession.sql`` once: with the session's warehouse set, reads of its tables
    become reads of the ``acidstore`` source (``acidstore.spark.sql_reads``), and DML and
    INSERT on them run here (``run_statement``); the rest is Spark's own ``sql``."""
    original = SparkSession.sql
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def sql(self: SparkSession, sqlQuery: str, args: Any = None,  # noqa: N803
            **kwargs: Any) -> DataFrame:
        if session_warehouse(self) is None:
            return original(self, sqlQuery, args, **kwargs)
        formatter = SQLStringFormatter(self)  # PySpark's own: DataFrames become views
        text = formatter.format(sqlQuery, **kwargs) if kwargs else sqlQuery
        try:
            plan = _parsed(self, text)
            if plan is None:  # not SQL Spark parses: let Spark say so
                return original(self, text, args)
            with routed_reads(self, text, plan, _read_roots(plan)) as routed:
                if routed != text:
                    plan = _parsed(self, routed)
                result = None if plan is None else run_statement(self, plan, args is not None)
                return original(self, routed, args) if result is None else result
        finally:
            formatter.clear()

    setattr(sql, _MARK, True)
    SparkSession.sql = sql  # type: ignore[method-assign]


def _parsed(spark: SparkSession, text: str) -> Any | None:
    try:
        return spark._jsparkSession.sessionState().sqlParser().parsePlan(text)
    except Exception:  # py4j raises Spark's ParseException as a plain Py4JJavaError
        return None


def _read_roots(plan: Any) -> list[Any]:
    """The parts of ``plan`` whose table references are reads (a DML statement's target
    table is not read as a view)."""
    kind = str(plan.getClass().getSimpleName())
    if kind == "MergeIntoTable":
        return [plan.sourceTable()]
    if kind in ("UpdateTable", "DeleteFromTable"):
        return []  # their subqueries are refused (spark_text)
    return [plan]


def _aliased(plan: Any) -> tuple[str | None, Any]:
    """``plan``'s alias (``t`` of ``hr.emp t``, None without) and the plan under it."""
    if str(plan.getClass().getSimpleName()) == "SubqueryAlias":
        return str(plan.alias()), plan.child()
    return None, plan


def _names(plan: Any) -> list[str] | None:
    """The name parts of a table reference; None if ``plan`` is something else."""
    if str(plan.getClass().getSimpleName()) != "UnresolvedRelation":
        return None
    return [str(p) for p in seq(plan.multipartIdentifier())]


def _relation(plan: Any) -> tuple[list[str], str | None] | None:
    """The name parts of a (possibly aliased) table reference and its alias; None if
    ``plan`` is something else (a subquery)."""
    alias, plan = _aliased(plan)
    names = _names(plan)
    return None if names is None else (names, alias)


def _target(plan: Any) -> Any:
    kind = str(plan.getClass().getSimpleName())
    return plan.targetTable() if kind == "MergeIntoTable" else plan.table()


def run_statement(spark: SparkSession, plan: Any, parameters: bool) -> DataFrame | None:
    """Run the parsed statement ``plan`` if it is DML or INSERT on a table of the session's
    warehouse and return its result; None when it is not (Spark runs it). ``parameters``:
    ``spark.sql`` was given ``args``, which such a statement cannot take."""
    kind = str(plan.getClass().getSimpleName())
    if kind not in _WRITES:
        return None
    target = _relation(_target(plan))
    name = None if target is None else warehouse_table(spark, target[0])
    if target is None or name is None:
        return None
    if parameters:
        raise UnsupportedOperationError(
            f"spark.sql of DML on acidstore table {name}: args (parameter markers) are not "
            "supported; put the values in the text, or use AcidTable")
    table = AcidTable.forName(spark, name, warehouse=str(session_warehouse(spark)),
                              metastore=session_metastore(spark))
    alias = target[1]
    run: dict[str, Callable[[], WriteResult]] = {
        "UpdateTable": lambda: _update(table, plan, alias),
        "DeleteFromTable": lambda: _delete(table, plan, alias),
        "MergeIntoTable": lambda: _merge(spark, table, plan, alias or target[0][-1]),
        "InsertIntoStatement": lambda: run_insert(spark, table, plan),
    }
    return _result(spark, run[kind]())


def _option(option: Any) -> Any | None:
    return option.get() if option.isDefined() else None


def _result(spark: SparkSession, result: WriteResult) -> DataFrame:
    """Delta's one row of counts for ``result``."""
    counts = (result.rows_updated, result.rows_deleted, result.rows_inserted)
    if result.operation == "update":  # an UPDATE rewrites: its rows count once
        counts = (result.rows_updated, 0, 0)
    return spark.createDataFrame([(sum(counts), *counts)], RESULT_SCHEMA)


def _unaliased(alias: str | None, what: str) -> None:
    """UPDATE and DELETE conditions are over the table's bare column names."""
    if alias is not None:
        raise UnsupportedOperationError(
            f"{what} with a table alias ({alias}) is not supported on acidstore tables; name "
            "the columns without it")


def _column(key: Any, alias: str | None, where: str) -> str:
    """The column an assignment sets (``c`` or ``alias.c``)."""
    parts = [str(p) for p in seq(key.nameParts())]
    if len(parts) == 2 and alias is not None and parts[0].lower() == alias.lower():
        parts = parts[1:]
    if len(parts) != 1:
        raise UnsupportedOperationError(f"{where}: cannot set {'.'.join(parts)} (a column of "
                                        "the target table, or a nested field, which is "
                                        "not supported)")
    return parts[0]


def _assignments(action: Any, alias: str | None, where: str) -> dict[str, str]:
    return {_column(a.key(), alias, where): expression_text(a.value(), where)
            for a in seq(action.assignments())}


def _condition(expression: Any | None, where: str) -> str | None:
    return None if expression is None else expression_text(expression, where)


def _update(table: AcidTable, plan: Any, alias: str | None) -> WriteResult:
    where = f"UPDATE of {table.name}"
    _unaliased(alias, where)
    condition = _condition(_option(plan.condition()), where) or "true"
    return table.update(condition, _assignments(plan, None, where))


def _delete(table: AcidTable, plan: Any, alias: str | None) -> WriteResult:
    where = f"DELETE from {table.name}"
    _unaliased(alias, where)
    return table.delete(expression_text(plan.condition(), where))


def _source(spark: SparkSession, plan: Any) -> DataFrame:
    """The MERGE source as a DataFrame Spark plans (a table, a view or a subquery), under its
    alias (a bare name: its last part, as Spark resolves ``src.id``)."""
    alias, plan = _aliased(plan)
    names = _names(plan)
    if alias is None and names is not None:
        alias = names[-1]
    dataset = spark._jvm.org.apache.spark.sql.classic.Dataset  # type: ignore[union-attr]
    frame = DataFrame(dataset.ofRows(spark._jsparkSession, plan), spark)
    return frame.alias(alias) if alias else frame


#: (clause class, clause list) -> the builder call that adds it
_CLAUSES: dict[tuple[str, str], Callable[[AcidMergeBuilder, str | None, dict[str, str]],
                                         AcidMergeBuilder]] = {
    ("UpdateAction", "matched"): lambda b, c, v: b.whenMatchedUpdate(c, v),
    ("UpdateStarAction", "matched"): lambda b, c, v: b.whenMatchedUpdateAll(c),
    ("DeleteAction", "matched"): lambda b, c, v: b.whenMatchedDelete(c),
    ("InsertAction", "notMatched"): lambda b, c, v: b.whenNotMatchedInsert(c, v),
    ("InsertStarAction", "notMatched"): lambda b, c, v: b.whenNotMatchedInsertAll(c),
    ("UpdateAction", "bySource"): lambda b, c, v: b.whenNotMatchedBySourceUpdate(c, v),
    ("DeleteAction", "bySource"): lambda b, c, v: b.whenNotMatchedBySourceDelete(c),
}


def _merge(spark: SparkSession, table: AcidTable, plan: Any, alias: str) -> WriteResult:
    where = f"MERGE into {table.name}"
    builder = table.alias(alias).merge(_source(spark, plan.sourceTable()),
                                       expression_text(plan.mergeCondition(), where))
    for group, actions in (("matched", plan.matchedActions()),
                           ("notMatched", plan.notMatchedActions()),
                           ("bySource", plan.notMatchedBySourceActions())):
        for action in seq(actions):
            kind = str(action.getClass().getSimpleName())
            add = _CLAUSES.get((kind, group))
            if add is None:
                raise UnsupportedOperationError(f"{where}: {kind} is not supported")
            values = _assignments(action, alias, where) if kind in (
                "UpdateAction", "InsertAction") else {}
            builder = add(builder, _condition(_option(action.condition()), where), values)
    return builder.execute()
