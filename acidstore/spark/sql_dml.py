"""``spark.sql`` UPDATE, DELETE and MERGE on the tables of a warehouse, by name.

PySpark 4.3 cannot put a warehouse table in Spark's catalog (``acidstore.spark.views`` says
why), so Spark alone would answer ``UPDATE hr.emp ...`` with TABLE_OR_VIEW_NOT_FOUND. With
the session setting ``spark.acidstore.warehouse`` (and ``spark.acidstore.metastore`` for a
shared metastore), ``import acidstore.spark`` makes ``SparkSession.sql`` parse the text first
with Spark's own parser, in the driver (no analysis, no job): an UPDATE, DELETE FROM or MERGE
INTO whose target is a ``db.table`` of that warehouse runs through ``AcidTable`` (the same
transaction, conflict rules and errors), its expressions printed as the statement core's SQL
(``acidstore.spark.spark_text``) and a MERGE's source planned by Spark. Every other statement,
and DML on any other name, is Spark's, unchanged. The result is a one-row DataFrame of counts,
as Delta's DML returns (``RESULT_SCHEMA``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from acidstore.api.connect import connect
from acidstore.api.pairing import chosen_metastore
from acidstore.config import SPARK_METASTORE_CONF, SPARK_WAREHOUSE_CONF
from acidstore.engine.results import WriteResult
from acidstore.errors import UnsupportedOperationError
from acidstore.spark.acid_table import AcidTable
from acidstore.spark.merge_statement import AcidMergeBuilder
from acidstore.spark.spark_text import expression_text

__all__ = ["RESULT_SCHEMA", "hook_sql", "run_statement"]

#: the one row a statement returns (Delta's column names; UPDATE and DELETE fill the counts
#: of their kind, the others are 0)
RESULT_SCHEMA = ("num_affected_rows bigint, num_updated_rows bigint, "
                 "num_deleted_rows bigint, num_inserted_rows bigint")
_DML = frozenset({"UpdateTable", "DeleteFromTable", "MergeIntoTable"})
_MARK = "__acidstore_sql_hook__"


def hook_sql() -> None:
    """Wrap ``SparkSession.sql`` once: DML on a table of the session's warehouse runs here
    (``run_statement``), any other text is Spark's own ``sql``."""
    original = SparkSession.sql
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def sql(self: SparkSession, sqlQuery: str, args: Any = None,  # noqa: N803
            **kwargs: Any) -> DataFrame:
        result = run_statement(self, sqlQuery, args is not None or bool(kwargs))
        return original(self, sqlQuery, args, **kwargs) if result is None else result

    setattr(sql, _MARK, True)
    SparkSession.sql = sql  # type: ignore[method-assign]


def _seq(seq: Any) -> list[Any]:
    """A Scala Seq as a list."""
    return [seq.apply(i) for i in range(seq.length())]


def _option(option: Any) -> Any | None:
    return option.get() if option.isDefined() else None


def _aliased(plan: Any) -> tuple[str | None, Any]:
    """``plan``'s alias (``t`` of ``hr.emp t``, None without) and the plan under it."""
    if str(plan.getClass().getSimpleName()) == "SubqueryAlias":
        return str(plan.alias()), plan.child()
    return None, plan


def _names(plan: Any) -> list[str] | None:
    """The name parts of a table reference; None if ``plan`` is something else."""
    if str(plan.getClass().getSimpleName()) != "UnresolvedRelation":
        return None
    return [str(p) for p in _seq(plan.multipartIdentifier())]


def _relation(plan: Any) -> tuple[list[str], str | None] | None:
    """The name parts of a (possibly aliased) table reference and its alias; None if
    ``plan`` is something else (a subquery)."""
    alias, plan = _aliased(plan)
    names = _names(plan)
    return None if names is None else (names, alias)


def _table_name(spark: SparkSession, parts: list[str]) -> str | None:
    """``db.table`` if ``parts`` names a table of the session's warehouse, else None (the
    statement is then Spark's)."""
    warehouse = spark.conf.get(SPARK_WAREHOUSE_CONF, None)
    if not warehouse or len(parts) != 2:
        return None
    name = ".".join(parts).lower()
    with connect(warehouse, metastore=_metastore(spark), create=False) as wh:
        return name if name in wh.tables() else None


def _metastore(spark: SparkSession) -> str | None:
    return chosen_metastore(spark.conf.get(SPARK_METASTORE_CONF, None) or None)


def run_statement(spark: SparkSession, text: str, parameters: bool
                  ) -> DataFrame | None:
    """Run ``text`` if it is DML on a table of the session's warehouse and return its result;
    None when it is not (Spark runs it). ``parameters``: ``spark.sql`` was given ``args``
    or format arguments, which such a statement cannot take."""
    if not spark.conf.get(SPARK_WAREHOUSE_CONF, None):
        return None
    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(text)
    except Exception:  # not SQL Spark parses: let Spark say so
        return None
    kind = str(plan.getClass().getSimpleName())
    if kind not in _DML:
        return None
    target = _relation(plan.targetTable() if kind == "MergeIntoTable" else plan.table())
    name = None if target is None else _table_name(spark, target[0])
    if target is None or name is None:
        return None
    if parameters:
        raise UnsupportedOperationError(
            f"spark.sql of DML on acidstore table {name}: args and format arguments are not "
            "supported; put the values in the text, or use AcidTable")
    table = AcidTable.forName(spark, name, warehouse=str(spark.conf.get(SPARK_WAREHOUSE_CONF)),
                              metastore=_metastore(spark))
    alias = target[1]
    run: dict[str, Callable[[], WriteResult]] = {
        "UpdateTable": lambda: _update(table, plan, alias),
        "DeleteFromTable": lambda: _delete(table, plan, alias),
        "MergeIntoTable": lambda: _merge(spark, table, plan, alias or target[0][-1]),
    }
    return _result(spark, run[kind]())


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
    parts = [str(p) for p in _seq(key.nameParts())]
    if len(parts) == 2 and alias is not None and parts[0].lower() == alias.lower():
        parts = parts[1:]
    if len(parts) != 1:
        raise UnsupportedOperationError(f"{where}: cannot set {'.'.join(parts)} (a column of "
                                        "the target table, or a nested field, which is "
                                        "not supported)")
    return parts[0]


def _assignments(action: Any, alias: str | None, where: str) -> dict[str, str]:
    return {_column(a.key(), alias, where): expression_text(a.value(), where)
            for a in _seq(action.assignments())}


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
        for action in _seq(actions):
            kind = str(action.getClass().getSimpleName())
            add = _CLAUSES.get((kind, group))
            if add is None:
                raise UnsupportedOperationError(f"{where}: {kind} is not supported")
            values = _assignments(action, alias, where) if kind in (
                "UpdateAction", "InsertAction") else {}
            builder = add(builder, _condition(_option(action.condition()), where), values)
    return builder.execute()
