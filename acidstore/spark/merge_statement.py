"""MERGE on Spark: ``AcidTable.merge(source, condition).whenMatchedUpdate(...)...execute()``.

The source is joined to the target (read at the transaction's snapshot with ROW__IDs): an inner
join when every clause is a WHEN MATCHED one, a left outer join from the source with WHEN NOT
MATCHED clauses, a right (or full) outer join with WHEN NOT MATCHED BY SOURCE ones, which act
on target rows without a source row. Per joined row, the first clause of its kind (in the
order given) whose condition holds decides what happens, as in the embedded MERGE; each
clause writes with statement ids of its own. A target row matched by more than one source
row raises MergeCardinalityError before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from pyspark.sql.pandas.types import to_arrow_schema

from acidstore.engine import writes
from acidstore.engine.handle import TableHandle
from acidstore.engine.merge_match import MergeClause, MergeSpec, clause_values
from acidstore.engine.results import WriteResult
from acidstore.engine.statement import ChangeKind
from acidstore.engine.task_writes import (
    CLAUSE_COLUMN,
    DELETE_COLUMN,
    INSERT_COLUMN,
    ORDER_COLUMN,
)
from acidstore.errors import InvalidInputError
from acidstore.format.orc.schema import ROW_ID_COLUMN
from acidstore.spark.conditions import Condition, condition_column, sql_text
from acidstore.spark.schema_mapping import arrow_schema
from acidstore.spark.typed_errors import spark_errors, spark_write

__all__ = ["AcidMergeBuilder"]

#: the aliases the statement core gives a MERGE side the caller left unaliased
UNALIASED_SOURCE, UNALIASED_TARGET = "__acid_s", "__acid_t"


@dataclass(frozen=True)
class _Clause:
    kind: Literal["update", "delete", "insert"]
    condition: Condition | None
    #: column -> value; None: every column from the source column of the same name
    values: Mapping[str, Condition] | None


class MergeTarget(Protocol):
    """What the builder needs of the table it merges into (``AcidTable``): its name and
    alias, its current handle, and the three ways a MERGE runs."""

    name: str
    _alias: str | None

    def _table(self) -> AbstractContextManager[TableHandle]: ...

    def _core_statement(self, kind: ChangeKind, condition: str | None = None,
                        assignments: Mapping[str, str] | None = None,
                        merge: MergeSpec | None = None) -> WriteResult: ...

    def _shuffled_merge(self, spec: MergeSpec, source: DataFrame, on: Column
                        ) -> WriteResult: ...

    def _merge_statement(self, changes: Callable[[DataFrame, TableHandle], DataFrame],
                         source_rows: int) -> WriteResult: ...


class AcidMergeBuilder:
    """Collects WHEN clauses (delta-spark's names); ``execute()`` runs the MERGE."""

    def __init__(self, table: MergeTarget, source: DataFrame, condition: Condition) -> None:
        self._table = table
        self._source = source
        self._condition = condition
        self._matched: list[_Clause] = []
        self._not_matched: list[_Clause] = []
        self._by_source: list[_Clause] = []

    def _add(self, into: list[_Clause], clause: _Clause) -> AcidMergeBuilder:
        into.append(clause)
        return self

    def _update(self, into: list[_Clause], method: str, condition: Condition | None,
                set: Mapping[str, Condition] | None) -> AcidMergeBuilder:
        if not set:
            raise InvalidInputError(f"{method} needs at least one column to set")
        return self._add(into, _Clause("update", condition, dict(set)))

    def whenMatchedUpdate(self, condition: Condition | None = None,  # noqa: N802
                          set: Mapping[str, Condition] | None = None) -> AcidMergeBuilder:
        return self._update(self._matched, "whenMatchedUpdate", condition, set)

    def whenMatchedUpdateAll(self, condition: Condition | None = None  # noqa: N802
                             ) -> AcidMergeBuilder:
        return self._add(self._matched, _Clause("update", condition, None))

    def whenMatchedDelete(self, condition: Condition | None = None  # noqa: N802
                          ) -> AcidMergeBuilder:
        return self._add(self._matched, _Clause("delete", condition, {}))

    def whenNotMatchedInsert(self, condition: Condition | None = None,  # noqa: N802
                             values: Mapping[str, Condition] | None = None) -> AcidMergeBuilder:
        if not values:
            raise InvalidInputError("whenNotMatchedInsert needs the values to insert")
        return self._add(self._not_matched, _Clause("insert", condition, dict(values)))

    def whenNotMatchedInsertAll(self, condition: Condition | None = None  # noqa: N802
                                ) -> AcidMergeBuilder:
        return self._add(self._not_matched, _Clause("insert", condition, None))

    def whenNotMatchedBySourceUpdate(self, condition: Condition | None = None,  # noqa: N802
                                     set: Mapping[str, Condition] | None = None
                                     ) -> AcidMergeBuilder:
        """Update target rows no source row matched (``set`` and ``condition`` over the
        target alone)."""
        return self._update(self._by_source, "whenNotMatchedBySourceUpdate", condition, set)

    def whenNotMatchedBySourceDelete(self, condition: Condition | None = None  # noqa: N802
                                     ) -> AcidMergeBuilder:
        """Delete target rows no source row matched (``condition`` over the target alone)."""
        return self._add(self._by_source, _Clause("delete", condition, {}))

    def execute(self) -> WriteResult:
        """Run the MERGE; ``metrics`` holds num_source_rows and the target rows updated,
        deleted and inserted. The source's Spark jobs may run before the MERGE's transaction
        opens (a small source is collected to plan it): their failure is typed too."""
        if not self._matched and not self._not_matched and not self._by_source:
            raise InvalidInputError("MERGE needs at least one WHEN clause")
        with spark_write(f"MERGE into {self._table.name}", self._table.name):
            return self._execute()

    def _execute(self) -> WriteResult:
        self._check()
        planned = self._core_spec()
        if planned is not None:
            spec, on = planned
            if on is not None:
                return self._table._shuffled_merge(spec, self._source, on)
            return self._table._core_statement("merge", merge=spec)
        where = f"MERGE into {self._table.name}"
        with spark_errors(where):
            source_rows = self._source.count()
        return self._table._merge_statement(
            lambda target, table: self._changes(target, table, where), source_rows)

    def _check(self) -> None:
        """The clause checks every MERGE front end makes (``writes.check_merge``), whichever
        way this one then runs: a condition or value given as a Column that has no SQL text
        is checked for its presence and column only (Spark's analysis checks what such a
        Column of a WHEN NOT MATCHED BY SOURCE clause names: ``_target_scope``)."""
        def checked(c: _Clause) -> MergeClause:
            condition = None if c.condition is None else sql_text(c.condition) or "TRUE"
            return MergeClause(c.kind, condition, None if c.values is None else tuple(
                (name, sql_text(value) or "NULL") for name, value in c.values.items()))

        with self._table._table() as table:
            writes.check_merge(table, arrow_schema(self._source.schema),
                               (_alias(self._source) or UNALIASED_SOURCE,
                                self._table._alias or UNALIASED_TARGET),
                               [checked(c) for c in self._matched + self._not_matched],
                               [checked(c) for c in self._by_source])

    # --- through the statement core ------------------------------------------------------------

    def _core_spec(self) -> tuple[MergeSpec, Column | None] | None:
        """The MERGE as the statement core runs it, when it can: every condition and value a
        SQL string (or a Column that says the same in SQL); None otherwise, and then Spark's
        DataFrames run it. A source small enough to broadcast to
        the tasks (Spark's own size estimate, at most
        ``spark.acidstore.merge.maxSourceBytes``, 256 MiB unless set) is collected into the
        spec; a larger one stays in Spark (the spec holds only its columns) and the ON
        condition comes back as the Column Spark joins on (``merge_shuffle``)."""
        clauses = self._matched + self._not_matched + self._by_source
        given = [self._condition, *(c.condition for c in clauses if c.condition is not None),
                 *(v for c in clauses for v in (c.values or {}).values())]
        texts = {id(g): sql_text(g) for g in given}
        # a side without an alias gets one of ours: its columns are then named bare, which
        # both engines resolve when the name is unique across the two sides (and refuse as
        # ambiguous otherwise)
        source_alias = _alias(self._source) or UNALIASED_SOURCE
        target_alias = self._table._alias or UNALIASED_TARGET
        if any(t is None for t in texts.values()):
            return None

        def text(condition: Condition | None) -> str | None:
            return None if condition is None else texts[id(condition)]

        limit = int(self._source.sparkSession.conf.get(
            "spark.acidstore.merge.maxSourceBytes", str(256 << 20)) or 0)
        where = f"MERGE into {self._table.name}"
        with spark_errors(where):
            shuffled = _estimated_bytes(self._source, limit) > limit
        with self._table._table() as table:
            on = condition_column(self._condition, where, self._scope(table)) if shuffled \
                else None
            matched, by_source = ([MergeClause(c.kind, text(c.condition), clause_values(
                None if c.values is None else {writes.updatable_column(table, n): str(text(v))
                                               for n, v in c.values.items()}))
                for c in kind] for kind in (self._matched, self._by_source))
            inserts = [MergeClause("insert", text(c.condition), clause_values(
                None if c.values is None else {n: str(text(v)) for n, v in
                                               writes.insertable_columns(table, c.values).items()}))
                       for c in self._not_matched]
        if shuffled:
            source = arrow_schema(self._source.schema).empty_table()
        else:
            with spark_errors(where):
                source = self._source.toArrow()
        return MergeSpec.build(source, str(text(self._condition)), source_alias=source_alias,
                               target_alias=target_alias, matched=matched,
                               not_matched=inserts, not_matched_by_source=by_source), on

    # --- the plan ------------------------------------------------------------------------------

    def _source_column(self, name: str) -> Column:
        by_lower = {c.lower(): c for c in self._source.columns}
        if name.lower() not in by_lower:
            raise InvalidInputError(
                f"MERGE ... ALL needs source column {name!r} (source has "
                f"{self._source.columns})")
        return self._source[by_lower[name.lower()]]

    def _values(self, clause: _Clause, table: TableHandle, target: DataFrame, where: str,
                scope: Mapping[str, pa.Schema]) -> dict[str, Column]:
        """The new row of an UPDATE or INSERT clause, column by column."""
        user = [f.name for f in table.info.schema]
        parts = list(table.info.partition_schema.names)
        if clause.kind == "update":
            if clause.values is None:
                chosen = {n: self._source_column(n) for n in user}
            else:
                chosen = {writes.updatable_column(table, n): condition_column(v, where, scope)
                          for n, v in clause.values.items()}
            return {n: chosen.get(n, target[n]) for n in user + parts}
        known = {n.lower(): n for n in user + parts}
        if clause.values is None:
            return {n: self._source_column(n) for n in user + parts}
        unknown = [c for c in clause.values if c.lower() not in known]
        if unknown:
            raise InvalidInputError(f"unknown column(s) {unknown} in MERGE insert of "
                                    f"{table.name}")
        given = {known[c.lower()]: condition_column(v, where, scope)
                 for c, v in clause.values.items()}
        return {n: given.get(n, F.lit(None)) for n in user + parts}

    def _scope(self, table: TableHandle) -> dict[str, pa.Schema]:
        """What the MERGE's SQL strings may name: the target and the source by alias (the
        sandbox check binds them over empty tables of these columns)."""
        try:
            source = to_arrow_schema(self._source.schema)
        except Exception as exc:  # a Spark type Arrow has no form for
            raise InvalidInputError(f"MERGE into {table.name}: cannot check SQL strings "
                                    f"against the source's columns ({exc}); use Columns") from exc
        scope: dict[str, pa.Schema] = {}
        for alias, schema in ((self._table._alias or "", table.schema),
                              (_alias(self._source) or "", source)):
            known = scope.get(alias, pa.schema([]))  # both unaliased: one namespace
            scope[alias] = pa.schema([*known, *(f for f in schema if f.name not in known.names)])
        return scope

    def _changes(self, target: DataFrame, table: TableHandle, where: str) -> DataFrame:
        scope = self._scope(table)
        # the source's order: its inserted rows are written in it, as the statement core does
        source = self._source.withColumn(ORDER_COLUMN, F.monotonically_increasing_id())
        alias = _alias(self._source)
        source = source.alias(alias) if alias else source
        joined = source.join(
            target, on=condition_column(self._condition, where, scope),
            how=_JOINS[bool(self._not_matched), bool(self._by_source)])
        has_source, has_target = source[ORDER_COLUMN].isNotNull(), \
            target[ROW_ID_COLUMN].isNotNull()
        matched = has_source & has_target
        parts = list(table.info.partition_schema.names)
        label: Column | None = None
        clauses = self._matched + self._not_matched + self._by_source
        kinds = [matched] * len(self._matched) + [~has_target] * len(self._not_matched) + \
            [~has_source] * len(self._by_source)
        scopes = [scope] * (len(clauses) - len(self._by_source)) + [
            self._target_scope(table, target, where, n) for n in range(len(self._by_source))]
        for index, (clause, kind) in enumerate(zip(clauses, kinds, strict=True)):
            when = kind if clause.condition is None else kind & condition_column(
                clause.condition, where, scopes[index])
            label = F.when(when, F.lit(index)) if label is None else label.when(when, index)
        assert label is not None
        names = [f.name for f in table.info.schema] + parts
        values = {index: self._values(c, table, target, where, scopes[index])
                  for index, c in enumerate(clauses) if c.kind != "delete"}
        columns = []
        for name in names:
            # a matched pair no clause takes (-1) keeps the target's values: its partition
            # and ROW__ID are what the writing tasks' cardinality check compares
            column: Column = F.when(F.col(CLAUSE_COLUMN) == -1, target[name])
            for index, clause in enumerate(clauses):
                value = target[name] if clause.kind == "delete" else values[index][name]
                cond = F.col(CLAUSE_COLUMN) == index
                column = column.when(cond, value)
            columns.append(column.alias(name))
        inserting = [i for i, c in enumerate(clauses) if c.kind != "delete"]
        # a matched pair no clause takes stays, as clause -1 (written by no one), so that a
        # target row's second match is seen whatever the clauses' conditions say
        labelled = joined.select("*", F.coalesce(label, F.when(matched, F.lit(-1)))
                                 .alias(CLAUSE_COLUMN)).filter(F.col(CLAUSE_COLUMN).isNotNull())
        changes = labelled.select(
            *columns,
            # every clause that acts on a target row deletes it (an UPDATE writes it anew)
            target[ROW_ID_COLUMN].alias(DELETE_COLUMN),
            F.col(CLAUSE_COLUMN).isin(inserting).alias(INSERT_COLUMN),
            F.col(CLAUSE_COLUMN).cast("int").alias(CLAUSE_COLUMN), F.col(ORDER_COLUMN))
        return changes

    def _target_scope(self, table: TableHandle, target: DataFrame, where: str, number: int
                      ) -> dict[str, pa.Schema]:
        """What WHEN NOT MATCHED BY SOURCE clause ``number`` (from 0) may name: the target
        alone, as the statement core binds it. Its SQL strings are checked over that scope
        where they become Columns; its Columns by Spark's analysis over the target here (a
        Column naming the source has no row to read)."""
        clause = self._by_source[number]
        with spark_errors(f"{where}: WHEN NOT MATCHED BY SOURCE clause {number + 1}"):
            for given in [clause.condition, *(clause.values or {}).values()]:
                if isinstance(given, Column):
                    target.select(given)
        return {self._table._alias or "": table.schema}


#: the join of the source to the target, by (WHEN NOT MATCHED, WHEN NOT MATCHED BY SOURCE)
#: clauses present: a side's unmatched rows are kept where a clause acts on them
_JOINS = {(False, False): "inner", (True, False): "left", (False, True): "right",
          (True, True): "full"}


def _alias(frame: DataFrame) -> str | None:
    """The alias ``frame.alias(name)`` gave, read from its analysed plan (None without)."""
    try:
        plan = frame._jdf.queryExecution().analyzed()
        if plan.getClass().getSimpleName() == "SubqueryAlias":
            return str(plan.alias())
    except Exception:  # no JVM plan to read (e.g. Spark Connect): no alias
        return None
    return None


#: what Spark's statistics say of a plan they cannot size (``Long.MaxValue``)
_UNKNOWN_SIZE = (1 << 63) - 1


def _estimated_bytes(frame: DataFrame, limit: int) -> int:
    """Spark's estimate of ``frame``'s size (its optimizer's statistics; no job runs). A plan
    Spark cannot size, above all ``createDataFrame`` of a Python list (an RDD, whatever its
    length), would always count as too large to broadcast: for such a plan the rows are
    counted, at most enough of them to pass ``limit`` at Spark's own default width per row,
    so a small source is broadcast and a large one costs one bounded pass to find out."""
    try:
        size = int(str(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # no estimate: as Spark's own answer for a plan it cannot size
        size = _UNKNOWN_SIZE
    if size < _UNKNOWN_SIZE or limit <= 0:
        return size
    width = max(1, int(frame._jdf.schema().defaultSize()))
    rows = frame.limit(limit // width + 1).count()
    return rows * width


