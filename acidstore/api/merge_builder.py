"""MERGE INTO (layer L4): the embedded builder, shaped like delta-spark's.

The builder only collects the WHEN clauses; the statement core runs the MERGE (see
``acidstore.engine.merge_match``) with Hive's semantics: per target row the first WHEN MATCHED
clause whose condition holds applies, per source row no target row matched the first WHEN NOT
MATCHED clause whose condition holds, and per target row no source row matched the first WHEN
NOT MATCHED BY SOURCE clause whose condition holds (``acidstore.engine.merge_by_source``); a
target row matched by more than one source row raises ``MergeCardinalityError`` and nothing
is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from acidstore.engine import writes
from acidstore.engine.handle import TableHandle
from acidstore.engine.merge_match import MergeClause, MergeSpec, clause_values
from acidstore.engine.results import WriteResult
from acidstore.errors import InvalidInputError
from acidstore.io.fs import storage_boundary

__all__ = ["MergeBuilder"]


@storage_boundary
class MergeBuilder:
    """Collects WHEN clauses; ``execute()`` runs the MERGE and returns its metrics."""

    def __init__(self, table: TableHandle, source: pa.Table, condition: str, source_alias: str,
                 target_alias: str) -> None:
        self._table = table
        self._source = source
        self._condition = condition
        self._aliases = (source_alias, target_alias)
        MergeSpec.build(source.schema.empty_table(), condition, source_alias=source_alias,
                        target_alias=target_alias, matched=[],
                        not_matched=[MergeClause("insert", None, None)])  # checks now
        self._matched: list[MergeClause] = []
        self._not_matched: list[MergeClause] = []
        self._by_source: list[MergeClause] = []

    def _update(self, method: str, set: Mapping[str, str] | None, condition: str | None,
                new_values: Mapping[str, Any] | None) -> MergeClause:
        """An UPDATE clause of ``method`` (named in errors): at least one column, each one
        an UPDATE may set."""
        given = writes.set_clause(self._table, set, new_values, "MERGE update")
        if not given:
            raise InvalidInputError(f"{method} needs at least one column to set")
        columns = {writes.updatable_column(self._table, name): value
                   for name, value in given.items()}
        return MergeClause("update", condition, clause_values(columns))

    def when_matched_update(self, set: Mapping[str, str] | None = None,
                            condition: str | None = None, *,
                            new_values: Mapping[str, Any] | None = None) -> MergeBuilder:
        """Update matched rows: ``set`` to SQL expressions over ``t`` and ``s``,
        ``new_values`` to Python values (no SQL quoting)."""
        self._matched.append(self._update("when_matched_update", set, condition, new_values))
        return self

    def when_matched_update_all(self, condition: str | None = None) -> MergeBuilder:
        self._matched.append(MergeClause("update", condition, None))
        return self

    def when_matched_delete(self, condition: str | None = None) -> MergeBuilder:
        self._matched.append(MergeClause("delete", condition, ()))
        return self

    def when_not_matched_insert(self, values: Mapping[str, str] | None = None,
                                condition: str | None = None, *,
                                new_values: Mapping[str, Any] | None = None) -> MergeBuilder:
        """Insert a row per unmatched source row: ``values`` as SQL expressions over ``s``,
        ``new_values`` as Python values."""
        given = writes.set_clause(self._table, values, new_values, "MERGE insert")
        if not given:
            raise InvalidInputError("when_not_matched_insert needs at least one column's value")
        self._not_matched.append(MergeClause("insert", condition, clause_values(
            writes.insertable_columns(self._table, given))))
        return self

    def when_not_matched_insert_all(self, condition: str | None = None) -> MergeBuilder:
        self._not_matched.append(MergeClause("insert", condition, None))
        return self

    def when_not_matched_by_source_update(self, set: Mapping[str, str] | None = None,
                                          condition: str | None = None, *,
                                          new_values: Mapping[str, Any] | None = None
                                          ) -> MergeBuilder:
        """Update target rows no source row matched: ``set`` to SQL expressions over ``t``
        alone (there is no source row), ``new_values`` to Python values."""
        self._by_source.append(self._update("when_not_matched_by_source_update", set,
                                            condition, new_values))
        return self

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> MergeBuilder:
        """Delete target rows no source row matched (``condition``: over ``t`` alone)."""
        self._by_source.append(MergeClause("delete", condition, ()))
        return self

    def execute(self) -> WriteResult:
        """Run the MERGE in the table's transaction (or its own); returns counts in
        ``metrics``: source rows, target rows updated, deleted and inserted."""
        source_alias, target_alias = self._aliases
        writes.check_merge(self._table, self._source.schema, self._aliases,
                           self._matched + self._not_matched, self._by_source)
        spec = MergeSpec.build(self._source, self._condition, source_alias=source_alias,
                               target_alias=target_alias, matched=self._matched,
                               not_matched=self._not_matched,
                               not_matched_by_source=self._by_source)
        return writes.execute_merge(self._table, spec)
