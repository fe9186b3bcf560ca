"""MERGE INTO (layer L4), with Hive's semantics and a builder shaped like delta-spark's.

The source is joined to the target (read at the transaction's snapshot, with ROW__IDs) by one
DuckDB query that also decides, per source row, which WHEN clause applies (the first whose
condition holds, in the order given) and computes every SET / VALUES expression. Then each clause
writes with its own statement id, as Hive gives each MERGE branch its own: an UPDATE clause
writes delete events plus new rows, a DELETE clause delete events, an INSERT clause new rows.

A target row matched by more than one source row makes the MERGE ambiguous; like Hive's
cardinality check it raises ``MergeCardinalityError`` and nothing is written.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidstore.errors import InvalidInputError, MergeCardinalityError
from acidstore.expressions import SqlEvaluator, check_expression, quote
from acidstore.orc.schema import ROW_ID_COLUMN
from acidstore.read.keys import KeyArrays
from acidstore.write.conform import conform, split_partitions

if TYPE_CHECKING:
    from acidstore.table import Table, WriteResult
    from acidstore.transaction import Transaction

__all__ = ["MergeBuilder"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_W, _B, _R, _PART, _CLAUSE = "__acid_w", "__acid_b", "__acid_r", "__acid_part", "__acid_clause"


@dataclass(frozen=True)
class _Clause:
    kind: Literal["update", "delete", "insert"]
    condition: str | None
    values: dict[str, str] | None  # None: all columns from the source by name


class MergeBuilder:
    """Collects WHEN clauses; ``execute()`` runs the MERGE and returns its metrics."""

    def __init__(self, table: Table, source: pa.Table, condition: str, source_alias: str,
                 target_alias: str) -> None:
        for alias in (source_alias, target_alias):
            if not _IDENT.match(alias):
                raise InvalidInputError(f"alias {alias!r} is not a plain identifier")
        if source_alias.lower() == target_alias.lower():
            raise InvalidInputError("source and target aliases must differ")
        check_expression(condition)
        self._table = table
        self._source = source
        self._condition = condition
        self._s = source_alias
        self._t = target_alias
        self._matched: list[_Clause] = []
        self._not_matched: list[_Clause] = []

    def _add(self, into: list[_Clause], clause: _Clause) -> MergeBuilder:
        if clause.condition is not None:
            check_expression(clause.condition)
        for text in (clause.values or {}).values():
            check_expression(text)
        into.append(clause)
        return self

    def when_matched_update(self, set: dict[str, str], condition: str | None = None
                            ) -> MergeBuilder:
        return self._add(self._matched, _Clause("update", condition,
                                                self._table._check_assignments(set)))

    def when_matched_update_all(self, condition: str | None = None) -> MergeBuilder:
        return self._add(self._matched, _Clause("update", condition, None))

    def when_matched_delete(self, condition: str | None = None) -> MergeBuilder:
        return self._add(self._matched, _Clause("delete", condition, {}))

    def when_not_matched_insert(self, values: dict[str, str], condition: str | None = None
                                ) -> MergeBuilder:
        known = {n.lower(): n for n in self._table.schema.names}
        unknown = [c for c in values if c.lower() not in known]
        if unknown:
            raise InvalidInputError(f"unknown column(s) {unknown} in MERGE insert of "
                                    f"{self._table.name}")
        fixed = {known[c.lower()]: v for c, v in values.items()}
        return self._add(self._not_matched, _Clause("insert", condition, fixed))

    def when_not_matched_insert_all(self, condition: str | None = None) -> MergeBuilder:
        return self._add(self._not_matched, _Clause("insert", condition, None))

    def execute(self) -> WriteResult:
        """Run the MERGE in the table's transaction (or its own); returns counts in
        ``metrics``: source rows, target rows updated, deleted and inserted."""
        if not self._matched and not self._not_matched:
            raise InvalidInputError("MERGE needs at least one WHEN clause")
        return self._table._run(self._execute)

    # --- the work --------------------------------------------------------------------------------

    def _source_column(self, name: str) -> str:
        names = {n.lower(): n for n in self._source.column_names}
        if name.lower() not in names:
            raise InvalidInputError(
                f"MERGE ... ALL needs source column {name!r} (source has "
                f"{self._source.column_names})")
        return f"{self._s}.{quote(names[name.lower()])}"

    def _select(self) -> str:
        t, table = self._t, self._table
        user = [f.name for f in table.info.schema]
        parts = list(table.info.partition_schema.names)
        pieces = [f"{t}.{_W}", f"{t}.{_B}", f"{t}.{_R}", f"{t}.{_PART}"]
        matched = " ".join(f"WHEN ({c.condition or 'TRUE'}) THEN {i}"
                           for i, c in enumerate(self._matched))
        offset = len(self._matched)
        missing = " ".join(f"WHEN ({c.condition or 'TRUE'}) THEN {offset + i}"
                           for i, c in enumerate(self._not_matched))
        pieces.append(
            f"CASE WHEN {t}.{_R} IS NOT NULL THEN "
            f"{'CASE ' + matched + ' ELSE -1 END' if matched else '-1'} "
            f"ELSE {'CASE ' + missing + ' ELSE -1 END' if missing else '-1'} END AS {_CLAUSE}")
        for i, clause in enumerate(self._matched):
            if clause.kind != "update":
                continue
            for name in user:
                text = (clause.values or {}).get(name) if clause.values is not None \
                    else self._source_column(name)
                pieces.append(f"({text or f'{t}.{quote(name)}'}) AS {quote(f'__u{i}_{name}')}")
            pieces.extend(f"{t}.{quote(name)} AS {quote(f'__u{i}_{name}')}" for name in parts)
        for j, clause in enumerate(self._not_matched):
            for name in user + parts:
                text = clause.values.get(name) if clause.values is not None \
                    else self._source_column(name)
                pieces.append(f"({text or 'NULL'}) AS {quote(f'__i{offset + j}_{name}')}")
        return (f"SELECT {', '.join(pieces)} FROM __acid_source AS {self._s} "
                f"LEFT JOIN __acid_target AS {self._t} ON ({self._condition})")

    def _target(self, txn: Transaction) -> pa.Table:
        table = self._table
        batches = []
        scan = table._scan(txn.snapshot, txn.write_ids(table.name), with_row_id=True)
        for partition, batch in scan.partition_batches():
            ids = batch.column(ROW_ID_COLUMN)
            extra = {_W: ids.field("writeid"), _B: ids.field("bucketid"),
                     _R: ids.field("rowid"),
                     _PART: pa.array([table._relative(partition)] * batch.num_rows, pa.string())}
            plain = pa.Table.from_batches([batch]).drop_columns([ROW_ID_COLUMN])
            for name, array in extra.items():
                plain = plain.append_column(name, array)
            batches.append(plain)
        if batches:
            return pa.concat_tables(batches)
        fields = [*list(scan.schema)[:-1], pa.field(_W, pa.int64()), pa.field(_B, pa.int32()),
                  pa.field(_R, pa.int64()), pa.field(_PART, pa.string())]
        return pa.schema(fields).empty_table()

    def _execute(self, txn: Transaction) -> WriteResult:
        from acidstore.table import WriteResult

        table = self._table
        evaluator = SqlEvaluator()
        try:
            joined = evaluator.query({"__acid_source": self._source,
                                      "__acid_target": self._target(txn)},
                                     self._select(), shown=f"MERGE ON {self._condition!r}")
        finally:
            evaluator.close()
        self._check_cardinality(joined)
        clause_of = joined.column(_CLAUSE).to_numpy(zero_copy_only=False)
        write_id: int | None = None
        counts = {"num_source_rows": self._source.num_rows, "num_target_rows_updated": 0,
                  "num_target_rows_deleted": 0, "num_target_rows_inserted": 0}
        partitions: set[str] = set()
        for index, clause in enumerate(self._matched + self._not_matched):
            rows = joined.filter(pa.array(clause_of == index))
            if rows.num_rows == 0:
                continue
            if write_id is None:
                write_id = txn.write_id(table.name)
            statement = txn.next_statement_id(table.name)
            for partition, deleted, inserted in self._changes(clause, index, rows):
                op = "insert" if clause.kind == "insert" else clause.kind
                table.write_changes(txn, partition, op, write_id=write_id, statement=statement,
                                    deleted=deleted, inserted=inserted)
                partitions.add(partition)
            key = {"update": "num_target_rows_updated", "delete": "num_target_rows_deleted",
                   "insert": "num_target_rows_inserted"}[clause.kind]
            counts[key] += rows.num_rows
        return WriteResult(txn.txn_id, write_id, "merge",
                           rows_inserted=counts["num_target_rows_inserted"],
                           rows_updated=counts["num_target_rows_updated"],
                           rows_deleted=counts["num_target_rows_deleted"],
                           partitions=tuple(sorted(partitions)), metrics=counts)

    def _check_cardinality(self, joined: pa.Table) -> None:
        if not self._matched:
            return
        matched = joined.filter(pc.is_valid(joined.column(_R)))
        # a ROW__ID is unique within its partition only: every partition's rows of one write
        # start at row id 0, so the partition is part of a target row's identity
        keys = matched.select([_PART, _W, _B, _R]).group_by([_PART, _W, _B, _R]).aggregate([])
        if keys.num_rows != matched.num_rows:
            raise MergeCardinalityError(
                f"MERGE into {self._table.name}: a target row matched more than one source row "
                "(cardinality violation); nothing was written")

    def _changes(self, clause: _Clause, index: int, rows: pa.Table
                 ) -> list[tuple[str, KeyArrays | None, pa.Table | None]]:
        table = self._table
        out: list[tuple[str, KeyArrays | None, pa.Table | None]] = []
        if clause.kind in ("update", "delete"):
            by_part: dict[str, list[int]] = defaultdict(list)
            for i, part in enumerate(rows.column(_PART).to_pylist()):
                by_part[part].append(i)
            for part, positions in by_part.items():
                chosen = rows.take(pa.array(positions))
                keys = KeyArrays(
                    chosen.column(_W).to_numpy(zero_copy_only=False).astype(np.int64),
                    chosen.column(_B).to_numpy(zero_copy_only=False).astype(np.int32),
                    chosen.column(_R).to_numpy(zero_copy_only=False).astype(np.int64))
                new = None
                if clause.kind == "update":
                    new = conform(self._values(chosen, f"__u{index}_"), table.schema,
                                  where=f"MERGE update of {table.name}")
                out.append((part, keys, new))
            return out
        new = conform(self._values(rows, f"__i{index}_"), table.schema,
                      where=f"MERGE insert into {table.name}")
        for part in split_partitions(new, list(table.info.partition_schema.names)):
            out.append((part.path, None, part.rows))
        return out

    def _values(self, rows: pa.Table, prefix: str) -> pa.Table:
        names = self._table.schema.names
        return pa.table({n: rows.column(prefix + n) for n in names})
