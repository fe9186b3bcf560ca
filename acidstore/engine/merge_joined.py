"""MERGE units whose join an engine already did (layer L3): the shuffled MERGE of a source too
large to hand whole to every unit.

The engine joins the source to the target's join columns (decoded unit by unit, with their
ROW__IDs) and routes each matched pair to the unit that holds its target row. A unit then
receives only its pairs: every source row that matched one of its rows, with the target
columns the MERGE names. Because every pair of a target row lands in that row's unit, the
cardinality check is a uniqueness check of the pairs' ROW__IDs, in the same job. The clauses
are chosen and evaluated by the same code as a broadcast MERGE (``merge_match.match``,
joining the pairs back by their position), so both MERGEs decide identically. With WHEN NOT
MATCHED BY SOURCE clauses the unit also reads its own rows (the columns the MERGE names) and
gives those whose ROW__ID no pair holds to ``merge_by_source``. The rows a unit changes are
written in ROW__ID order (the scan order of a broadcast unit), whatever order the shuffle
delivered the pairs in.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from acidstore.engine.merge_by_source import by_source_match, combined, in_order
from acidstore.engine.merge_match import (
    SOURCE_INDEX,
    MergeMatch,
    check_cardinality,
    kept_columns,
    match,
    merge_columns,
    merged_rows,
    update_rows,
)
from acidstore.engine.restore_match import contains
from acidstore.engine.statement import (
    Changes,
    ChangeUnit,
    UnitOutcome,
    row_ids,
    scan_unit,
    write_changes,
)
from acidstore.format.orc.schema import ROW_ID_COLUMN
from acidstore.read.keys import KeyArrays
from acidstore.sql.expressions import SqlEvaluator

__all__ = ["run_joined_unit"]

#: the pairs' own position, which ``match`` adds to the target side as ``__acid_pos``
_PAIRED = f"{{s}}.{SOURCE_INDEX} = {{t}}.__acid_pos"


def run_joined_unit(unit: ChangeUnit, source: pa.Table, target: pa.Table, keys: KeyArrays,
                    evaluator: SqlEvaluator) -> UnitOutcome:
    """Apply a MERGE unit's WHEN MATCHED clauses to its matched pairs (and its WHEN NOT
    MATCHED BY SOURCE clauses to its other rows) and write the result: ``source`` (the
    source columns), ``target`` (the target columns the MERGE names) and ``keys`` (the
    target rows' ROW__IDs) are parallel, one entry per pair."""
    spec = unit.merge
    assert spec is not None and unit.kind == "merge"
    where = f"MERGE into {unit.target.name}"
    if not len(keys) and not spec.not_matched_by_source:
        return write_changes(unit, None)
    if spec.matched:
        check_cardinality([keys.write_id, keys.bucket, keys.row_id], where)
    paired = dataclasses.replace(
        spec, source=source.append_column(SOURCE_INDEX, pa.array(
            np.arange(source.num_rows, dtype=np.int64))),
        condition=_PAIRED.format(s=spec.source_alias, t=spec.target_alias))
    found = match(paired, target, unit.target.schema.names, where, evaluator)
    chosen, found = _with_unpaired(unit, keys.take(found.positions), found, keys, evaluator)
    updates = update_rows(spec, found)
    new = None
    if updates.any():
        kept = kept_columns(spec, unit.target.schema.names)
        old = _old_rows(unit, chosen.take(updates), kept, where) if kept else None
        new = merged_rows(spec, found, old, unit.target.schema, where)
    return write_changes(unit, Changes(chosen, new))


def _with_unpaired(unit: ChangeUnit, chosen: KeyArrays, found: MergeMatch, paired: KeyArrays,
                   evaluator: SqlEvaluator) -> tuple[KeyArrays, MergeMatch]:
    """The rows the pairs' clauses took (``chosen``, ``found``) and, with WHEN NOT MATCHED BY
    SOURCE clauses, the unit's rows no pair holds (``paired``: every pair's ROW__ID) that
    they take, in ROW__ID order; the match's positions index the returned ROW__IDs."""
    spec = unit.merge
    assert spec is not None
    batches = scan_unit(unit, merge_columns(spec, unit.target.full_schema.names)) \
        if spec.not_matched_by_source else []
    if batches:
        have = row_ids(batches)
        rows = pa.Table.from_batches(batches).drop_columns([ROW_ID_COLUMN])
        more = by_source_match(spec, rows, np.flatnonzero(~contains(paired, have)).astype(
            np.int64), evaluator)
        alone = have.take(more.positions)
        found = combined(dataclasses.replace(found, positions=np.arange(len(chosen))),
                         dataclasses.replace(more, positions=np.arange(len(alone)) + len(chosen)))
        chosen = KeyArrays(np.concatenate([chosen.write_id, alone.write_id]),
                           np.concatenate([chosen.bucket, alone.bucket]),
                           np.concatenate([chosen.row_id, alone.row_id]))
    order = np.lexsort((chosen.row_id, chosen.bucket, chosen.write_id))
    found = dataclasses.replace(in_order(found, order), positions=np.arange(len(order)))
    return chosen.take(order), found


def _old_rows(unit: ChangeUnit, wanted: KeyArrays, kept: list[str], where: str) -> pa.Table:
    """The ``kept`` columns (those an UPDATE clause does not set: ``kept_columns``) of the
    ROW__IDs ``wanted``, in that order, read at the unit's snapshot."""
    batches = scan_unit(unit, kept)
    have = row_ids(batches) if batches else KeyArrays.empty()
    index = pa.table({"w": have.write_id, "b": have.bucket, "r": have.row_id,
                      "__at": np.arange(len(have), dtype=np.int64)})
    asked = pa.table({"w": wanted.write_id, "b": wanted.bucket, "r": wanted.row_id,
                      "__order": np.arange(len(wanted), dtype=np.int64)})
    found = asked.join(index, ["w", "b", "r"]).sort_by("__order")
    if found.num_rows != len(wanted):
        raise AssertionError(f"{where}: a matched row is missing from a second read of the "
                             "same snapshot")
    full = pa.Table.from_batches(batches).drop_columns([ROW_ID_COLUMN])
    return full.take(found.column("__at"))
