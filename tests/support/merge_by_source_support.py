"""Random MERGEs that mix every clause kind, WHEN NOT MATCHED BY SOURCE included, with a plain
Python model of what each does (dicts keyed by ``id``), for the embedded differential test
(tests/engine/test_merge_by_source.py) and the Spark one (tests/spark/
test_spark_merge_by_source.py).

A plan is SQL text plus its Python meaning: the ON condition is always ``t.id = s.id``; per
target row the first WHEN MATCHED clause whose condition holds applies (or, with no source
row, the first WHEN NOT MATCHED BY SOURCE clause), per unmatched source row the first WHEN NOT
MATCHED clause. The model also says what the change feed of the MERGE's write id holds: per
partition, updates with no delete there are pre- and postimages, updates beside deletes are
deletes and inserts (the files cannot tell them apart), inserts are inserts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa
from hypothesis import strategies as st

Row = dict[str, Any]
Model = dict[int, Row]
Holds = Callable[[Row | None, Row | None], bool]  # (source, target)
Apply = Callable[[Row | None, Row | None], Row]  # (source, target) -> the new row

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("amount", pa.int64()), pa.field("dt", pa.string())])
COLUMNS = SCHEMA.names
DTS: list[str | None] = ["a", "b", "c", "d", None]


@dataclass(frozen=True)
class Shape:
    """A table layout: ``dt`` a partition column or a plain one, bucketed by ``id`` or not."""

    name: str
    partitioned: bool
    buckets: int

    def create(self, wh: Any, name: str) -> Any:
        return wh.create_table(name, SCHEMA, partition_by=["dt"] if self.partitioned else [],
                               bucket_by=["id"] if self.buckets else [], buckets=self.buckets)

    @property
    def settable(self) -> list[str]:
        """The columns an UPDATE SET * takes from the source (partition columns stay)."""
        return ["id", "name", "amount"] + ([] if self.partitioned else ["dt"])

    def partition(self, row: Row) -> Any:
        return row["dt"] if self.partitioned else ""


SHAPES = [Shape("partitioned_bucketed", True, 3), Shape("bucketed", False, 4),
          Shape("partitioned", True, 0)]


def _num(row: Row | None, column: str) -> Any:
    assert row is not None
    return row[column]


def _gt(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a > b


def _times(value: Any, k: int) -> Any:
    return None if value is None else value * k


def _plus(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a + b


@dataclass(frozen=True)
class Clause:
    kind: Literal["update", "delete", "insert"]
    condition: str | None
    holds: Holds
    #: column -> SQL; None: SET * / INSERT *
    values: dict[str, str] | None
    apply: Apply


def _always(s: Row | None, t: Row | None) -> bool:
    return True


def _keep(s: Row | None, t: Row | None) -> Row:
    assert t is not None
    return t


MATCHED_CONDITIONS: list[tuple[str | None, Holds]] = [
    (None, _always),
    ("s.amount > t.amount", lambda s, t: _gt(_num(s, "amount"), _num(t, "amount"))),
    ("s.amount < 0", lambda s, t: _gt(0, _num(s, "amount"))),
    ("t.name IS NULL", lambda s, t: _num(t, "name") is None),
]
BY_SOURCE_CONDITIONS: list[tuple[str | None, Holds]] = [
    (None, _always),
    ("t.amount > 3", lambda s, t: _gt(_num(t, "amount"), 3)),
    ("t.id % 2 = 0", lambda s, t: _num(t, "id") % 2 == 0),
    ("t.name IS NULL", lambda s, t: _num(t, "name") is None),
    ("t.dt = 'b'", lambda s, t: _num(t, "dt") == "b"),
]
INSERT_CONDITIONS: list[tuple[str | None, Holds]] = [
    (None, _always),
    ("s.amount > 0", lambda s, t: _gt(_num(s, "amount"), 0)),
]


def _matched_actions(shape: Shape) -> list[tuple[str, dict[str, str] | None, Apply]]:
    def set_all(s: Row | None, t: Row | None) -> Row:
        assert s is not None and t is not None
        return {**t, **{c: s[c] for c in shape.settable}}

    return [
        ("update", {"amount": "s.amount"},
         lambda s, t: {**_keep(s, t), "amount": _num(s, "amount")}),
        ("update", {"amount": "t.amount + s.amount"},
         lambda s, t: {**_keep(s, t), "amount": _plus(_num(t, "amount"), _num(s, "amount"))}),
        ("update", None, set_all),
        ("delete", {}, _keep),
    ]


BY_SOURCE_ACTIONS: list[tuple[str, dict[str, str], Apply]] = [
    ("update", {"amount": "t.amount * 10"},
     lambda s, t: {**_keep(s, t), "amount": _times(_num(t, "amount"), 10)}),
    ("update", {"name": "'gone'"}, lambda s, t: {**_keep(s, t), "name": "gone"}),
    ("delete", {}, _keep),
]


def _insert_all(s: Row | None, t: Row | None) -> Row:
    assert s is not None
    return dict(s)


INSERT_ACTIONS: list[tuple[dict[str, str] | None, Apply]] = [
    (None, _insert_all),
    ({"id": "s.id", "amount": "s.amount * 2", "dt": "s.dt"},
     lambda s, t: {"id": _num(s, "id"), "name": None, "amount": _times(_num(s, "amount"), 2),
                   "dt": _num(s, "dt")}),
]


@st.composite
def _clauses(draw: st.DrawFn, kind: str, shape: Shape) -> list[Clause]:
    """Up to two clauses of one kind, of which only the last may lack a condition (Spark's
    and Delta's rule)."""
    out: list[Clause] = []
    for _ in range(draw(st.integers(0, 2))):
        if kind == "matched":
            condition, holds = draw(st.sampled_from(MATCHED_CONDITIONS))
            action, values, apply = draw(st.sampled_from(_matched_actions(shape)))
            out.append(Clause(action, condition, holds, values, apply))  # type: ignore[arg-type]
        elif kind == "by_source":
            condition, holds = draw(st.sampled_from(BY_SOURCE_CONDITIONS))
            action, values, apply = draw(st.sampled_from(BY_SOURCE_ACTIONS))
            out.append(Clause(action, condition, holds, values, apply))  # type: ignore[arg-type]
        else:
            condition, holds = draw(st.sampled_from(INSERT_CONDITIONS))
            values, apply = draw(st.sampled_from(INSERT_ACTIONS))
            out.append(Clause("insert", condition, holds, values, apply))
    if out:
        out = [c for c in out if c.condition is not None] + [
            c for c in out if c.condition is None][:1]
    return out


@dataclass(frozen=True)
class Plan:
    source: list[Row]
    matched: list[Clause]
    not_matched: list[Clause]
    by_source: list[Clause]

    def source_table(self) -> pa.Table:
        return pa.Table.from_pylist(self.source, schema=SCHEMA)

    def __repr__(self) -> str:  # what hypothesis prints of a failing example
        def said(cs: list[Clause]) -> list[tuple[str, str | None, Any]]:
            return [(c.kind, c.condition, c.values) for c in cs]

        return (f"Plan(source={self.source}, matched={said(self.matched)}, "
                f"not_matched={said(self.not_matched)}, by_source={said(self.by_source)})")


ids = st.integers(0, 29)
names = st.one_of(st.none(), st.sampled_from(["a", "b", "z"]))
amounts = st.one_of(st.none(), st.integers(-3, 9))


def rows(keys: list[int], draw: st.DrawFn) -> list[Row]:
    return [{"id": k, "name": draw(names), "amount": draw(amounts),
             "dt": draw(st.sampled_from(DTS))} for k in keys]


@st.composite
def initial_rows(draw: st.DrawFn) -> list[Row]:
    """The table's first rows: ids 0..19 (some left out), every ``dt``."""
    return rows(draw(st.lists(st.integers(0, 19), min_size=5, max_size=20, unique=True)), draw)


@st.composite
def plans(draw: st.DrawFn, shape: Shape, targets: list[int]) -> Plan:
    """A MERGE with at least one WHEN NOT MATCHED BY SOURCE clause (most of the time) beside
    any other clauses; its source touches a few ids (so most partitions and buckets get no
    source row), and sometimes names one of the ``targets`` (the table's ids) twice."""
    keys = draw(st.lists(ids, max_size=6, unique=True))
    source = rows(keys, draw)
    present = [k for k in keys if k in targets]
    if present and draw(st.integers(0, 5)) == 0:
        source.append({**source[keys.index(present[0])], "name": "twice"})
    matched = draw(_clauses("matched", shape))
    not_matched = draw(_clauses("not_matched", shape))
    by_source = draw(_clauses("by_source", shape))
    if not by_source and draw(st.booleans()):
        by_source = [Clause("delete", None, _always, {}, _keep)]
    if not (matched or not_matched or by_source):
        by_source = [Clause("delete", "t.amount > 3", BY_SOURCE_CONDITIONS[1][1], {}, _keep)]
    return Plan(source, matched, not_matched, by_source)


# --- running a plan -----------------------------------------------------------------------------


def embedded_merge(table: Any, plan: Plan) -> Any:
    builder = table.merge(plan.source_table(), "t.id = s.id")
    for c in plan.matched:
        if c.kind == "delete":
            builder = builder.when_matched_delete(condition=c.condition)
        elif c.values is None:
            builder = builder.when_matched_update_all(condition=c.condition)
        else:
            builder = builder.when_matched_update(c.values, condition=c.condition)
    for c in plan.not_matched:
        builder = builder.when_not_matched_insert_all(condition=c.condition) \
            if c.values is None else builder.when_not_matched_insert(c.values, c.condition)
    for c in plan.by_source:
        builder = builder.when_not_matched_by_source_delete(condition=c.condition) \
            if c.kind == "delete" else builder.when_not_matched_by_source_update(
                c.values, condition=c.condition)
    return builder.execute()


def spark_merge(at: Any, source: Any, plan: Plan) -> Any:
    """The same MERGE through ``AcidTable`` (``source``: the plan's source as a DataFrame)."""
    builder = at.alias("t").merge(source.alias("s"), "t.id = s.id")
    for c in plan.matched:
        if c.kind == "delete":
            builder = builder.whenMatchedDelete(condition=c.condition)
        elif c.values is None:
            builder = builder.whenMatchedUpdateAll(condition=c.condition)
        else:
            builder = builder.whenMatchedUpdate(condition=c.condition, set=c.values)
    for c in plan.not_matched:
        builder = builder.whenNotMatchedInsertAll(condition=c.condition) \
            if c.values is None else builder.whenNotMatchedInsert(condition=c.condition,
                                                                  values=c.values)
    for c in plan.by_source:
        builder = builder.whenNotMatchedBySourceDelete(condition=c.condition) \
            if c.kind == "delete" else builder.whenNotMatchedBySourceUpdate(
                condition=c.condition, set=c.values)
    return builder.execute()


# --- the model ----------------------------------------------------------------------------------


def _first(clauses: list[Clause], s: Row | None, t: Row | None) -> Clause | None:
    return next((c for c in clauses if c.holds(s, t)), None)


@dataclass
class Outcome:
    """What a plan does to the model: the new model, its counts and its change feed (a
    multiset of (change type, row as a tuple)); ``cardinality``: it must fail instead."""

    model: Model
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    feed: Counter[tuple[str, tuple[Any, ...]]] = field(default_factory=Counter)
    cardinality: bool = False


def row_tuple(row: Row) -> tuple[Any, ...]:
    return tuple(row[c] for c in COLUMNS)


def apply_plan(model: Model, plan: Plan, shape: Shape) -> Outcome:
    by_id: dict[int, list[Row]] = {}
    for s in plan.source:
        by_id.setdefault(s["id"], []).append(s)
    if plan.matched and any(len(by_id.get(k, [])) > 1 for k in model):
        return Outcome(dict(model), cardinality=True)
    out = Outcome({})
    updates: dict[Any, list[tuple[Row, Row]]] = {}
    deletes: dict[Any, list[Row]] = {}
    inserts: list[Row] = []
    for key, t in model.items():
        matches = by_id.get(key, [])
        clause = _first(plan.matched, matches[0], t) if matches else \
            _first(plan.by_source, None, t)
        if clause is None:
            out.model[key] = t
        elif clause.kind == "delete":
            deletes.setdefault(shape.partition(t), []).append(t)
        else:
            new = clause.apply(matches[0] if matches else None, t)
            out.model[key] = new
            updates.setdefault(shape.partition(t), []).append((t, new))
    for s in plan.source:
        if s["id"] in model:
            continue
        clause = _first(plan.not_matched, s, None)
        if clause is not None:
            new = clause.apply(s, None)
            out.model[new["id"]] = new
            inserts.append(new)
    out.inserted, out.updated = len(inserts), sum(len(u) for u in updates.values())
    out.deleted = sum(len(d) for d in deletes.values())
    for part in {*updates, *deletes}:
        pairs, gone = updates.get(part, []), deletes.get(part, [])
        pre, post = ("delete", "insert") if gone else ("update_preimage", "update_postimage")
        out.feed.update((pre, row_tuple(old)) for old, _ in pairs)
        out.feed.update((post, row_tuple(new)) for _, new in pairs)
        out.feed.update(("delete", row_tuple(old)) for old in gone)
    out.feed.update(("insert", row_tuple(new)) for new in inserts)
    return out


def feed_of(changes: pa.Table) -> Counter[tuple[str, tuple[Any, ...]]]:
    """A change feed (``Table.changes``) as the model's multiset."""
    return Counter((r["_change_type"], row_tuple(r)) for r in changes.to_pylist())


def sorted_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((row_tuple(r) for r in table.to_pylist()), key=repr)
