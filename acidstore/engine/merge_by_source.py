"""WHEN NOT MATCHED BY SOURCE in the statement core (layer L3): the target rows no source row
matched.

Such a clause acts on target rows, not on pairs, so a MERGE with one reads every row of the
table: every unit of the MERGE runs (one per partition and bucket of the target at the
statement's snapshot), also where no source row can reach it. Within a unit, the rows the
join matched (whatever their WHEN MATCHED clause did) are left to the matched clauses; each
other row takes the first WHEN NOT MATCHED BY SOURCE clause whose condition holds, evaluated
over the target row alone (its alias is the target's; the source has no row here, so naming it
is refused when the MERGE is built: ``merge_match.check_by_source``).

The clauses are numbered after the WHEN MATCHED ones (``MergeSpec.target_clauses``), and their
rows join the matched clauses' rows in one ``MergeMatch``: an UPDATE then writes a delete event
and a new row (the statement's update events, counted as updated rows and shown as updates by
the change feed), a DELETE a delete event, with the statement ids and code of WHEN MATCHED.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from acidstore.engine.merge_match import (
    MergeMatch,
    MergeSpec,
    clause_case,
    clause_texts,
    no_columns,
)
from acidstore.sql.expressions import SqlEvaluator, quote

__all__ = ["by_source_match", "combined", "in_order", "with_by_source"]

_CLAUSE, _POSITION = "__acid_by_source", "__acid_pos"


def with_by_source(spec: MergeSpec, found: MergeMatch, target: pa.Table,
                   evaluator: SqlEvaluator) -> MergeMatch:
    """``found`` (what one unit's join and WHEN MATCHED clauses decided over its decoded rows
    ``target``) with the rows its WHEN NOT MATCHED BY SOURCE clauses take, in scan order;
    ``found`` itself when the MERGE has no such clause."""
    if not spec.not_matched_by_source:
        return found
    alone = np.ones(target.num_rows, dtype=bool)
    alone[found.matched_target] = False  # a mask: a sorted difference costs ms per unit
    unmatched = np.flatnonzero(alone).astype(np.int64)
    return combined(found, by_source_match(spec, target, unmatched, evaluator))


def by_source_match(spec: MergeSpec, target: pa.Table, positions: npt.NDArray[np.int64],
                    evaluator: SqlEvaluator) -> MergeMatch:
    """The WHEN NOT MATCHED BY SOURCE clauses applied to the rows at ``positions`` of
    ``target`` (rows no source row matched, ascending): per row, the first clause whose
    condition holds, with its SET values. An unconditional DELETE first (the usual "delete
    what the source no longer has") needs no SQL at all."""
    clauses, offset = spec.not_matched_by_source, len(spec.matched)
    none = np.zeros(0, np.int64)
    if clauses[0].kind == "delete" and clauses[0].condition is None:
        return MergeMatch(positions, np.full(len(positions), offset, np.int32),
                          no_columns(len(positions)), none, none)
    t = spec.target_alias
    rows = target.take(pa.array(positions)).append_column(_POSITION, pa.array(positions))
    evaluator.check_row_wise({t: rows.schema}, clause_texts(clauses))
    pieces = [f"{t}.{_POSITION}", f"{clause_case(clauses, offset)} AS {_CLAUSE}"]
    set_names = []
    for j, clause in enumerate(clauses):
        for name, text in clause.values or ():
            set_names.append(f"__u{offset + j}_{name}")
            pieces.append(f"({text}) AS {quote(set_names[-1])}")
    chosen = evaluator.query({"__acid_target": rows},
                             f"SELECT {', '.join(pieces)} FROM __acid_target AS {t}",
                             shown="WHEN NOT MATCHED BY SOURCE")
    clause_of = np.asarray(chosen.column(_CLAUSE).to_numpy(zero_copy_only=False), np.int32)
    taken = chosen.filter(pa.array(clause_of >= 0))
    order = np.argsort(np.asarray(taken.column(_POSITION).to_numpy(zero_copy_only=False)),
                       kind="stable")  # scan order, whatever order the query kept
    taken = taken.take(pa.array(order))
    return MergeMatch(np.asarray(taken.column(_POSITION).to_numpy(zero_copy_only=False),
                                 np.int64),
                      clause_of[clause_of >= 0][order], taken.select(set_names), none, none)


def combined(first: MergeMatch, second: MergeMatch) -> MergeMatch:
    """The rows of ``first`` and ``second`` (positions into the same rows) in one match, by
    position, their SET values side by side (null where a row's clause sets no such
    column); ``first``'s matched rows."""
    positions = np.concatenate([first.positions, second.positions])
    values = pa.concat_tables([first.values, second.values], promote_options="default") \
        if first.values.num_columns or second.values.num_columns else no_columns(len(positions))
    both = MergeMatch(positions, np.concatenate([first.clauses, second.clauses]), values,
                      first.matched_source, first.matched_target)
    return in_order(both, np.argsort(positions, kind="stable"))


def in_order(found: MergeMatch, order: npt.NDArray[np.intp]) -> MergeMatch:
    """``found``'s rows taken in ``order``."""
    return dataclasses.replace(found, positions=found.positions[order],
                               clauses=found.clauses[order],
                               values=found.values.take(pa.array(order, pa.int64())))
