"""MERGE in the statement core (layer L3): what a MERGE matches, computed unit by unit.

A MERGE is planned like a DELETE: one unit per partition (and bucket, when bucketed) of the
target at the statement's snapshot, each carrying the (small) source: all of it, or, when the
ON condition equates the bucketing column and no original file is planned, only the rows that
hash to its bucket (``merge_routing.route_by_bucket``). A unit decodes only
the target columns the MERGE's SQL names plus the ROW__ID, joins them to the source in DuckDB,
applies the first WHEN MATCHED clause whose condition holds, and checks cardinality there: a
target row lives in exactly one unit, so a row matched twice is always seen by one unit, in the
same job. The WHEN NOT MATCHED BY SOURCE clauses take the unit's rows no source row matched
(``merge_by_source``). Full rows are decoded only for units where an UPDATE clause took a row
and leaves some column unchanged. Each unit reports the source rows it matched; the rows no
unit matched go through the WHEN NOT MATCHED clauses once, after every unit ran
(``not_matched_rows``).

Statement ids, one per kind of event (Hive 4 form, as UPDATE's): the delete events of UPDATE and
DELETE clauses take the statement's first id, the new rows of UPDATE clauses the next, the rows
of INSERT clauses the one after. Each kind's bucket files are then written by exactly one task.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from acidstore.engine.merge_keys import key_hits
from acidstore.errors import InvalidInputError, MergeCardinalityError
from acidstore.format.orc.types import cast_input
from acidstore.sql.expressions import (
    SqlEvaluator,
    check_expression,
    mentions_alias,
    quote,
    referenced_columns,
)

__all__ = ["MergeClause", "MergeMatch", "MergeSpec", "SOURCE_INDEX", "check_by_source",
           "check_cardinality", "check_clause_order", "clause_case", "clause_texts",
           "clause_values", "kept_columns", "match", "merge_columns", "merged_rows",
           "no_columns", "not_matched_rows", "plain_reference", "update_rows"]

ClauseKind = Literal["update", "delete", "insert"]

#: the source's row number, added by the planner so units can say which rows they matched
SOURCE_INDEX = "__acid_sidx"
_CLAUSE = "__acid_clause"


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause. ``values``: column -> SQL; None takes every column from the source
    column of the same name (UPDATE SET * / INSERT *)."""

    kind: ClauseKind
    condition: str | None
    values: tuple[tuple[str, str], ...] | None

    def __post_init__(self) -> None:
        for text in [self.condition or "TRUE", *(v for _, v in self.values or ())]:
            check_expression(text)


@dataclass(frozen=True)
class MergeSpec:
    """A MERGE as plain values (picklable): the source, the ON condition, the clauses."""

    source: pa.Table  # with SOURCE_INDEX appended
    condition: str
    source_alias: str
    target_alias: str
    matched: tuple[MergeClause, ...]
    not_matched: tuple[MergeClause, ...]
    #: WHEN NOT MATCHED BY SOURCE: UPDATE and DELETE clauses over the target row alone
    not_matched_by_source: tuple[MergeClause, ...] = ()

    @staticmethod
    def build(source: pa.Table, condition: str, *, source_alias: str, target_alias: str,
              matched: Sequence[MergeClause], not_matched: Sequence[MergeClause],
              not_matched_by_source: Sequence[MergeClause] = ()) -> MergeSpec:
        """Check the aliases and clauses and number the source's rows."""
        for alias in (source_alias, target_alias):
            if not alias.isidentifier() or not alias.isascii():
                raise InvalidInputError(f"alias {alias!r} is not a plain identifier")
        if source_alias.lower() == target_alias.lower():
            raise InvalidInputError("source and target aliases must differ")
        if not matched and not not_matched and not not_matched_by_source:
            raise InvalidInputError("MERGE needs at least one WHEN clause")
        check_expression(condition)
        check_by_source(not_matched_by_source, source_alias)
        numbered = source.append_column(SOURCE_INDEX, pa.array(
            np.arange(source.num_rows, dtype=np.int64)))
        return MergeSpec(numbered, condition, source_alias, target_alias, tuple(matched),
                         tuple(not_matched), tuple(not_matched_by_source))

    @property
    def target_clauses(self) -> tuple[MergeClause, ...]:
        """The clauses that change target rows, numbered as units number them: the WHEN
        MATCHED ones, then the WHEN NOT MATCHED BY SOURCE ones."""
        return self.matched + self.not_matched_by_source

    def source_column(self, name: str) -> str:
        """``alias."Name"`` of the source column ``name`` (any case), for SET * / INSERT *."""
        names = {n.lower(): n for n in self.source.column_names if n != SOURCE_INDEX}
        if name.lower() not in names:
            raise InvalidInputError(
                f"MERGE ... ALL needs source column {name!r} (source has "
                f"{[n for n in self.source.column_names if n != SOURCE_INDEX]})")
        return f"{self.source_alias}.{quote(names[name.lower()])}"

    def texts(self) -> list[str]:
        return [self.condition, *clause_texts(self.matched + self.not_matched
                                              + self.not_matched_by_source)]


def check_by_source(clauses: Sequence[MergeClause], source_alias: str) -> None:
    """The rules of WHEN NOT MATCHED BY SOURCE clauses, as Delta's: such a clause acts on a
    target row no source row matched, so it may UPDATE (with values for the columns it sets)
    or DELETE and name target columns only (a source column would have no row to come
    from); of several, only the last may omit its condition (the ones after it could never
    apply). ``InvalidInputError`` naming the clause otherwise."""
    for number, clause in enumerate(clauses, 1):
        what = f"WHEN NOT MATCHED BY SOURCE clause {number} ({clause.kind.upper()})"
        if clause.kind == "insert" or (clause.kind == "update" and not clause.values):
            raise InvalidInputError(f"{what}: only UPDATE SET of given columns or DELETE can "
                                    "act on a target row no source row matched")
        said = [t for t in [clause.condition or "", *(v for _, v in clause.values or ())]
                if t and mentions_alias(t, source_alias)]
        if said:
            raise InvalidInputError(
                f"{what}: {said[0]!r} refers to the source ({source_alias!r}), but no source "
                "row matched the rows this clause acts on; name target columns only")
    check_clause_order(clauses, "WHEN NOT MATCHED BY SOURCE")


def check_clause_order(clauses: Sequence[MergeClause], group: str) -> None:
    """Of several clauses of one group (``WHEN MATCHED``, ``WHEN NOT MATCHED``, ``WHEN NOT
    MATCHED BY SOURCE``), only the last may omit its condition: the ones after an
    unconditional clause could never apply, which Spark's parser and Delta refuse as a
    mistake rather than run."""
    for number, clause in enumerate(clauses[:-1], 1):
        if clause.condition is None:
            raise InvalidInputError(
                f"{group} clause {number} ({clause.kind.upper()}) has no condition but is not "
                f"the last {group} clause: only the last may omit its condition")


def clause_texts(clauses: Sequence[MergeClause]) -> list[str]:
    """The user's SQL texts of WHEN clauses: their conditions and SET/INSERT values."""
    return [*(c.condition for c in clauses if c.condition),
            *(v for c in clauses for _, v in c.values or ())]


def merge_columns(spec: MergeSpec, names: Sequence[str]) -> list[str]:
    """The target columns (of ``names``) the MERGE's SQL can refer to: all a unit decodes
    before it knows which rows match."""
    said = {n for text in spec.texts()
            for n in referenced_columns(text, names, own_alias=spec.target_alias,
                                        other_aliases=[spec.source_alias])}
    return [n for n in names if n in said]


def _set_values(spec: MergeSpec, clause: MergeClause, user: Sequence[str]) -> dict[str, str]:
    if clause.values is None:
        return {n: spec.source_column(n) for n in user}
    return dict(clause.values)


def clause_case(clauses: Sequence[MergeClause], offset: int) -> str:
    arms = " ".join(f"WHEN ({c.condition or 'TRUE'}) THEN {offset + i}"
                    for i, c in enumerate(clauses))
    return f"CASE {arms} ELSE -1 END" if arms else "-1"


@dataclass(frozen=True)
class MergeMatch:
    """What one unit's clauses that change target rows decided (``MergeSpec.target_clauses``:
    WHEN MATCHED, then WHEN NOT MATCHED BY SOURCE)."""

    #: positions (into the unit's decoded target rows) of the rows to delete, per row its clause
    positions: npt.NDArray[np.int64]
    clauses: npt.NDArray[np.int32]
    #: the SET values of the rows taken, in ``positions`` order: one column per UPDATE clause
    #: and column it sets (``__u{clause}_{column}``), of which only a row's own clause's count
    values: pa.Table
    #: source rows that matched some target row here (whatever their clause did)
    matched_source: npt.NDArray[np.int64]
    #: positions of the target rows some source row matched (whatever their clause did):
    #: the others are the rows WHEN NOT MATCHED BY SOURCE acts on
    matched_target: npt.NDArray[np.int64]


def check_cardinality(keys: Sequence[npt.NDArray[Any] | pa.Array | pa.ChunkedArray],
                      where: str) -> None:
    """Hive's cardinality check, the one every MERGE runs whichever engine found its
    matches: a target row matched by more than one source row raises
    ``MergeCardinalityError`` before anything is written. ``keys`` are equal-length columns
    that name a target row once per match (its position in a unit's scan; its ROW__ID's
    fields; its partition and ROW__ID)."""
    if not keys or len(keys[0]) < 2:
        return
    if len(keys) == 1 and isinstance(keys[0], np.ndarray):
        repeated = len(np.unique(keys[0])) != len(keys[0])
    else:
        table = pa.table({f"k{i}": k for i, k in enumerate(keys)})
        counts = table.group_by(table.column_names).aggregate([([], "count_all")])
        repeated = counts.num_rows != table.num_rows
    if repeated:
        raise MergeCardinalityError(
            f"{where}: a target row matched more than one source row (cardinality "
            "violation); nothing was written")


def match(spec: MergeSpec, target: pa.Table, user: Sequence[str], where: str,
          evaluator: SqlEvaluator) -> MergeMatch:
    """Join ``target`` (one unit's rows, the columns it decoded, in scan order) to the source
    and choose each matched row's clause; a target row matched by more than one source row
    raises MergeCardinalityError (Hive's cardinality check). The common MERGE (``ON t.a =
    s.b``, WHEN MATCHED without a condition, SET to source columns) joins in Arrow
    (``_key_match``); the rest in DuckDB."""
    fast = _key_match(spec, target, user, where)
    if fast is not None:
        return fast
    return _duckdb_match(spec, target, user, where, evaluator)


def _duckdb_match(spec: MergeSpec, target: pa.Table, user: Sequence[str], where: str,
                  evaluator: SqlEvaluator) -> MergeMatch:
    s, t = spec.source_alias, spec.target_alias
    numbered = target.append_column("__acid_pos", pa.array(
        np.arange(target.num_rows, dtype=np.int64)))
    evaluator.check_row_wise({s: spec.source.schema, t: numbered.schema},
                             [spec.condition, *clause_texts(spec.matched)])
    pieces = [f"{s}.{SOURCE_INDEX}", f"{t}.__acid_pos",
              f"{clause_case(spec.matched, 0)} AS {_CLAUSE}"]
    set_names: list[str] = []
    for i, clause in enumerate(spec.matched):
        if clause.kind == "update":
            for name, text in _set_values(spec, clause, user).items():
                pieces.append(f"({text}) AS {quote(f'__u{i}_{name}')}")
                set_names.append(f"__u{i}_{name}")
    joined = evaluator.query(
        {"__acid_source": spec.source, "__acid_target": numbered},
        f"SELECT {', '.join(pieces)} FROM __acid_source AS {s} "
        f"JOIN __acid_target AS {t} ON ({spec.condition})", shown=f"MERGE ON {spec.condition!r}")
    positions = np.asarray(joined.column("__acid_pos").to_numpy(zero_copy_only=False), np.int64)
    if spec.matched:
        check_cardinality([positions], where)
    clause_of = np.asarray(joined.column(_CLAUSE).to_numpy(zero_copy_only=False), np.int32)
    chosen = clause_of >= 0
    order = np.argsort(positions[chosen], kind="stable")  # file order: rows stay sorted
    picked = joined.filter(pa.array(chosen)).take(pa.array(order))
    return MergeMatch(positions[chosen][order], clause_of[chosen][order],
                      picked.select(set_names),
                      np.asarray(joined.column(SOURCE_INDEX).to_numpy(zero_copy_only=False),
                                 np.int64), np.unique(positions))


_NAME = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_]*)'


def plain_reference(text: str, alias: str, columns: Sequence[str]) -> str | None:
    """The column of ``columns`` that ``text`` is a plain reference to, qualified by
    ``alias`` (``s.id``, ``s."Id"``); None for anything else."""
    found = re.fullmatch(rf"\s*({_NAME})\s*\.\s*({_NAME})\s*", text)
    if found is None or _unquote(found.group(1)).lower() != alias.lower():
        return None
    wanted = _unquote(found.group(2)).lower()
    return next((c for c in columns if c.lower() == wanted), None)


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name


def _join_keys(spec: MergeSpec, target: pa.Table) -> tuple[pa.Array, pa.Array] | None:
    """The target's and the source's key columns of an ``ON t.a = s.b`` MERGE, as arrays of
    one type where SQL's equality is Arrow's (integers as int64, strings as large strings);
    None for any other condition or types."""
    sides = spec.condition.split("=")
    if len(sides) != 2:
        return None
    names = [c for c in spec.source.column_names if c != SOURCE_INDEX]
    t_key = s_key = None
    for left, right in (sides, sides[::-1]):
        t_key = plain_reference(left, spec.target_alias, target.column_names)
        s_key = plain_reference(right, spec.source_alias, names)
        if t_key is not None and s_key is not None:
            break
    if t_key is None or s_key is None:
        return None
    arrays = []
    for column in (target.column(t_key), spec.source.column(s_key)):
        kind = column.type
        if pa.types.is_integer(kind):
            wanted = pa.int64()
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            wanted = pa.large_string()
        else:
            return None
        try:
            arrays.append(column.cast(wanted).combine_chunks())
        except (pa.ArrowInvalid, OverflowError):
            return None
    if pa.types.is_integer(arrays[0].type) != pa.types.is_integer(arrays[1].type):
        return None
    return arrays[0], arrays[1]


def _key_match(spec: MergeSpec, target: pa.Table, user: Sequence[str], where: str
               ) -> MergeMatch | None:
    """``_duckdb_match``'s answer computed with Arrow's hash lookups, for a MERGE ``ON t.a =
    s.b`` (integer or string keys) whose first WHEN MATCHED clause has no condition (so it
    takes every matched row) and, if an UPDATE, sets columns to source columns as they are
    (``UPDATE SET *`` or ``SET x = s.y``); None otherwise. NULL keys match nothing, as in SQL.
    A DuckDB join costs a connection cursor and a plan per unit, which made a MERGE of a 1%
    source slower than its delta-rs peer."""
    clause = spec.matched[0] if spec.matched else None
    if clause is not None and clause.condition is not None:
        return None
    takes: dict[str, str] = {}
    if clause is not None and clause.kind == "update":
        names = [c for c in spec.source.column_names if c != SOURCE_INDEX]
        for name, text in _set_values(spec, clause, user).items():
            column = plain_reference(text, spec.source_alias, names)
            if column is None:
                return None
            takes[f"__u0_{name}"] = column
    keys = _join_keys(spec, target)
    if keys is None:
        return None
    target_keys, source_keys = keys
    # each target row's first matching source row, and the source rows that match some
    # target row, duplicates included (all the join's pairs); nulls never match
    hit_target, first, matched = key_hits(target_keys, source_keys)
    positions = hit_target if clause is not None else np.zeros(0, np.int64)
    if clause is not None:
        check_cardinality([source_keys.take(pa.array(matched)).to_numpy(zero_copy_only=False)],
                          where)
    rows = pa.array(first if clause is not None else np.zeros(0, np.int64))
    values = pa.table({alias: spec.source.column(column).take(rows)
                       for alias, column in takes.items()}) if takes else no_columns(len(rows))
    index = np.asarray(spec.source.column(SOURCE_INDEX).to_numpy(), np.int64)
    return MergeMatch(positions.astype(np.int64), np.zeros(len(positions), np.int32), values,
                      index[matched], hit_target.astype(np.int64))


def no_columns(rows: int) -> pa.Table:
    """A table of ``rows`` rows and no column: the SET values of rows no UPDATE took (Arrow
    keeps the row count of a table without columns only when it is built with one)."""
    return pa.table({"_": pa.nulls(rows)}).drop_columns(["_"])


def update_rows(spec: MergeSpec, found: MergeMatch) -> npt.NDArray[np.bool_]:
    """Which of ``found``'s rows an UPDATE clause took (the others a DELETE)."""
    kinds = np.array([c.kind == "update" for c in spec.target_clauses] or [False], dtype=bool)
    out: npt.NDArray[np.bool_] = kinds[found.clauses]
    return out


def merged_rows(spec: MergeSpec, found: MergeMatch, old: pa.Table | None, schema: pa.Schema,
                where: str) -> pa.Table:
    """The new rows of the UPDATE clauses: ``old`` (the target rows update clauses took, with
    at least the ``kept_columns``; None when every UPDATE clause sets every column) with each
    row's clause's SET values cast to the column types."""
    is_update = update_rows(spec, found)
    clause_of = found.clauses[is_update]
    values = found.values if is_update.all() else found.values.filter(pa.array(is_update))
    have = set(old.column_names) if old is not None else set()
    missing = [n for n in kept_columns(spec, schema.names) if n not in have]
    if missing:  # a kept value written as NULL would silently change the row
        raise AssertionError(f"{where}: the old values of {missing} were not read")
    columns = []
    for field in schema:
        # a column every UPDATE clause sets needs no old value: NULL until its SET value
        column = old.column(field.name) if old is not None and field.name in have else \
            pa.chunked_array([pa.nulls(len(clause_of), field.type)])
        for i, clause in enumerate(spec.target_clauses):
            name = f"__u{i}_{field.name}"
            if clause.kind != "update" or name not in values.column_names:
                continue
            cast = cast_input(values.column(name), field.type,
                           f"{where}: the value for column {field.name!r} is "
                           f"{values.column(name).type}, which does not convert to {field.type}")
            taken = clause_of == i
            # every row's clause (one UPDATE, the usual MERGE): its values as they are,
            # not a copy of each column chosen row by row
            column = cast if taken.all() else pc.if_else(pa.array(taken), cast, column)
        columns.append(column)
    return pa.table(columns, schema=schema)


def kept_columns(spec: MergeSpec, user: Sequence[str]) -> list[str]:
    """The columns (of ``user``, in that order) whose old value some UPDATE clause keeps:
    those one of them does not set. Only these are read back for the rows an UPDATE took.
    The matched 1% of a table lies in every row group of every stripe, so reading back a
    column decodes all of it: ``SET v1 = s.v1`` must not decode ``v1`` (nor what the match
    already decoded) a second time."""
    kept: set[str] = set()
    for clause in spec.target_clauses:
        if clause.kind == "update" and clause.values is not None:
            given = {n.lower() for n, _ in clause.values}
            kept.update(n for n in user if n.lower() not in given)
    return [n for n in user if n in kept]


def not_matched_rows(spec: MergeSpec, matched_source: npt.NDArray[np.int64],
                     full_schema: pa.Schema, evaluator: SqlEvaluator) -> pa.Table:
    """The rows the WHEN NOT MATCHED clauses insert (every column of ``full_schema``, before
    conforming) from the source rows no unit matched."""
    if not spec.not_matched:
        return full_schema.empty_table()
    index = spec.source.column(SOURCE_INDEX)
    left = spec.source.filter(pc.invert(pc.is_in(index, pa.array(matched_source))))
    taken = _source_columns(spec, spec.not_matched[0], full_schema.names)
    if taken is not None:  # INSERT * (or of source columns as they are), no condition
        return pa.table({name: left.column(column) for name, column in taken.items()})
    s, t = spec.source_alias, spec.target_alias
    evaluator.check_row_wise({s: left.schema, t: full_schema}, clause_texts(spec.not_matched))
    offset = len(spec.matched)
    pieces = [f"{clause_case(spec.not_matched, offset)} AS {_CLAUSE}"]
    for j, clause in enumerate(spec.not_matched):
        given = {n.lower(): v for n, v in clause.values or ()}
        for name in full_schema.names:
            text = (given.get(name.lower()) if clause.values is not None
                    else spec.source_column(name))
            pieces.append(f"({text or 'NULL'}) AS {quote(f'__i{offset + j}_{name}')}")
    rows = evaluator.query(
        {"__acid_source": left, "__acid_target": full_schema.empty_table()},
        f"SELECT {', '.join(pieces)} FROM __acid_source AS {s} "
        f"LEFT JOIN __acid_target AS {t} ON FALSE", shown=f"MERGE ON {spec.condition!r}")
    clause_of = np.asarray(rows.column(_CLAUSE).to_numpy(zero_copy_only=False), np.int32)
    parts: list[pa.Table] = []
    for j in range(len(spec.not_matched)):
        chosen = rows.filter(pa.array(clause_of == offset + j))
        if chosen.num_rows:
            parts.append(pa.table({n: chosen.column(f"__i{offset + j}_{n}")
                                   for n in full_schema.names}))
    if not parts:
        return full_schema.empty_table()
    return pa.concat_tables(parts, promote_options="permissive")


def _source_columns(spec: MergeSpec, clause: MergeClause, names: Sequence[str]
                    ) -> dict[str, str] | None:
    """Column -> the source column it takes as it is, for a clause without a condition that
    gives every one of ``names`` a plain source column (``INSERT *``, ``SET x = s.y``); None
    otherwise (then DuckDB evaluates the clause)."""
    if clause.condition is not None:
        return None
    sources = [c for c in spec.source.column_names if c != SOURCE_INDEX]
    given = {n.lower(): v for n, v in clause.values or ()}
    out = {}
    for name in names:
        text = given.get(name.lower()) if clause.values is not None \
            else spec.source_column(name)
        column = plain_reference(text, spec.source_alias, sources) if text is not None else None
        if column is None:
            return None
        out[name] = column
    return out


def clause_values(values: Mapping[str, str] | None) -> tuple[tuple[str, str], ...] | None:
    """A clause's column -> SQL mapping as the tuple MergeClause keeps."""
    return None if values is None else tuple(values.items())
