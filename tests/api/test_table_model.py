"""Stateful property test of the public table API against a plain-dict model (DESIGN habit 6).

Two tables live in one warehouse: ``db.pb`` is partitioned by ``dt`` (NULL included, which is
Hive's default partition) and bucketed by ``id`` into 3 buckets; ``db.plain`` has neither. The
model is, per table, a dict ``id -> row`` plus the model state after every committed write id.
Rules run INSERT, UPDATE, DELETE, MERGE (update, delete and insert clauses, conditions, first
matching clause wins; often all three kinds at once), INSERT OVERWRITE, explicit transactions of
several statements over both tables (committed, or aborted by an exception raised inside the
``with`` block, or refused because a statement writes where the transaction already overwrote),
a MERGE that violates cardinality, a streaming reader opened before a write, and time travel
(``as_of`` an earlier write id, whether committed, aborted or unused, or the commit time of one).

After every step each table must equal its model through ``to_arrow()`` and through
``read_directory`` at ``t.snapshot()`` with both the vectorized and the merge reader, which must
also agree with ``to_arrow`` on every ROW__ID.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import acidstore
from acidstore import Table, Transaction, Warehouse
from acidstore.api.merge_builder import MergeBuilder
from acidstore.engine.handle import handle_of
from acidstore.errors import InvalidInputError, MergeCardinalityError
from acidstore.format.writeids import ValidWriteIdList

Row = dict[str, Any]
Model = dict[int, Row]
RowTest = Callable[[Row], bool]

PB, PLAIN = "db.pb", "db.plain"
TABLES = (PB, PLAIN)
USER = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                  pa.field("amount", pa.int64())])
FULL = USER.append(pa.field("dt", pa.string()))
DTS: list[str | None] = ["a", "b", "c", None]


def schema_of(name: str) -> pa.Schema:
    return FULL if name == PB else USER


def columns_of(name: str) -> list[str]:
    return list(schema_of(name).names)


# --- SQL text and its Python meaning --------------------------------------------------------------


@dataclass(frozen=True)
class Pred:
    """A SQL predicate and what it means for a model row (NULL compares as false)."""

    sql: str
    test: RowTest
    partitioned_only: bool = False


def _gt(column: str, k: int) -> RowTest:
    return lambda r: r[column] is not None and r[column] > k


def _eq(column: str, value: Any) -> RowTest:
    return lambda r: r[column] is not None and r[column] == value


def _id_mod(k: int) -> RowTest:
    return lambda r: r["id"] % 3 == k


def _quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def predicates() -> st.SearchStrategy[Pred]:
    k = st.integers(-6, 12)
    return st.one_of(
        k.map(lambda v: Pred(f"id = {v}", _eq("id", v))),
        st.integers(0, 2).map(lambda v: Pred(f"id % 3 = {v}", _id_mod(v))),
        k.map(lambda v: Pred(f"amount > {v}", _gt("amount", v))),
        st.just(Pred("amount IS NULL", lambda r: r["amount"] is None)),
        st.just(Pred("name LIKE 'a%'",
                     lambda r: r["name"] is not None and r["name"].startswith("a"))),
        st.sampled_from(["a", "b", "c"]).map(
            lambda v: Pred(f"dt = {_quoted(v)}", _eq("dt", v), partitioned_only=True)),
        st.just(Pred("dt IS NULL", lambda r: r["dt"] is None, partitioned_only=True)),
        st.just(Pred("TRUE", lambda r: True)),
        st.just(Pred("id < 0", lambda r: False)),
    )


@dataclass(frozen=True)
class SetValue:
    column: str
    sql: str
    value: Callable[[Row], Any]


def _plus(column: str, k: int) -> Callable[[Row], Any]:
    return lambda r: None if r[column] is None else r[column] + k


SET_VALUES = [
    SetValue("amount", "amount + 1", _plus("amount", 1)),
    SetValue("amount", "id * 2", lambda r: r["id"] * 2),
    SetValue("amount", "NULL", lambda r: None),
    SetValue("amount", "COALESCE(amount, 0) - 3", lambda r: (r["amount"] or 0) - 3),
    SetValue("amount", "7", lambda r: 7),
    SetValue("name", "'z'", lambda r: "z"),
    SetValue("name", "name || 'x'", lambda r: None if r["name"] is None else r["name"] + "x"),
    SetValue("name", "NULL", lambda r: None),
]


def assignments() -> st.SearchStrategy[list[SetValue]]:
    return st.lists(st.sampled_from(SET_VALUES), min_size=1, max_size=2,
                    unique_by=lambda s: s.column)


names = st.one_of(st.none(), st.sampled_from(["a", "ab", "b", "z", "é"]))
amounts = st.one_of(st.none(), st.integers(-5, 9))


@st.composite
def new_rows(draw: st.DrawFn, *, min_size: int = 0, max_size: int = 4) -> list[Row]:
    """Rows without ids (the machine numbers them)."""
    n = draw(st.integers(min_size, max_size))
    return [{"name": draw(names), "amount": draw(amounts), "dt": draw(st.sampled_from(DTS))}
            for _ in range(n)]


# --- MERGE clauses -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Clause:
    """One WHEN clause: how to add it to a builder and what it does to a model row."""

    kind: str  # "update" | "delete" | "insert"
    condition: str | None
    holds: Callable[[Row, Row | None], bool]  # (source, target)
    add: Callable[[MergeBuilder, str], MergeBuilder]  # (builder, table name)
    apply: Callable[[Row, Row | None, str], Row | None]  # new row (None: delete)


def _amount_lt0(s: Row, t: Row | None) -> bool:
    return s["amount"] is not None and s["amount"] < 0


def _amount_gt5(s: Row, t: Row | None) -> bool:
    return s["amount"] is not None and s["amount"] > 5


def _always(s: Row, t: Row | None) -> bool:
    return True


def _amount_not_null(s: Row, t: Row | None) -> bool:
    return s["amount"] is not None


def _name_and_sum(s: Row, t: Row | None, table: str) -> Row:
    assert t is not None
    total = None if t["amount"] is None or s["amount"] is None else t["amount"] + s["amount"]
    return {**t, "name": s["name"], "amount": total}


def _all_from_source(s: Row, t: Row | None, table: str) -> Row:
    assert t is not None
    return {**t, **{c: s[c] for c in ("id", "name", "amount")}}  # dt stays the target's


def _amount_from_source(s: Row, t: Row | None, table: str) -> Row:
    assert t is not None
    return {**t, "amount": s["amount"]}


def _insert_all(s: Row, t: Row | None, table: str) -> Row:
    return {c: s[c] for c in columns_of(table)}


def _insert_values(s: Row, t: Row | None, table: str) -> Row:
    row = {"id": s["id"], "name": "new", "amount": None if s["amount"] is None
           else s["amount"] * 10}
    if table == PB:
        row["dt"] = s["dt"]
    return row


def _insert_values_map(table: str) -> dict[str, str]:
    values = {"id": "s.id", "name": "'new'", "amount": "s.amount * 10"}
    if table == PB:
        values["dt"] = "s.dt"
    return values


MATCHED = [
    Clause("delete", "s.amount < 0", _amount_lt0,
           lambda b, _: b.when_matched_delete(condition="s.amount < 0"),
           lambda s, t, table: None),
    Clause("update", None, _always,
           lambda b, _: b.when_matched_update({"name": "s.name", "amount": "t.amount + s.amount"}),
           _name_and_sum),
    Clause("update", "s.amount > 5", _amount_gt5,
           lambda b, _: b.when_matched_update_all(condition="s.amount > 5"), _all_from_source),
    Clause("update", None, _always,
           lambda b, _: b.when_matched_update({"amount": "s.amount"}), _amount_from_source),
    Clause("delete", None, _always, lambda b, _: b.when_matched_delete(),
           lambda s, t, table: None),
]
NOT_MATCHED = [
    Clause("insert", "s.amount IS NOT NULL", _amount_not_null,
           lambda b, _: b.when_not_matched_insert_all(condition="s.amount IS NOT NULL"),
           _insert_all),
    Clause("insert", None, _always,
           lambda b, table: b.when_not_matched_insert(_insert_values_map(table)),
           _insert_values),
    Clause("insert", None, _always, lambda b, _: b.when_not_matched_insert_all(), _insert_all),
]


def last_unconditional(clauses: Sequence[Clause]) -> list[Clause]:
    """``clauses`` in their order, but of those without a condition only one, last: a
    MERGE refuses an unconditional clause followed by another of its kind."""
    return [c for c in clauses if c.condition is not None] + [
        c for c in clauses if c.condition is None][:1]


@st.composite
def merge_clauses(draw: st.DrawFn) -> tuple[list[Clause], list[Clause]]:
    """Usually an update, a delete and an insert clause together, in any order."""
    matched = draw(st.lists(st.sampled_from(MATCHED), max_size=3, unique_by=id))
    missing = draw(st.lists(st.sampled_from(NOT_MATCHED), max_size=2, unique_by=id))
    if not matched and not missing:
        missing = [NOT_MATCHED[2]]
    return last_unconditional(matched), last_unconditional(missing)


def model_merge(model: Model, source: list[Row], matched: Sequence[Clause],
                missing: Sequence[Clause], table: str) -> Model:
    out = dict(model)
    for s in source:
        target = model.get(s["id"])
        for clause in (matched if target is not None else missing):
            if clause.holds(s, target):
                new = clause.apply(s, target, table)
                if new is None:
                    del out[s["id"]]
                else:
                    out[new["id"]] = new
                break
    return out


# --- the statements a rule or a transaction runs ------------------------------------------------


@dataclass
class Statement:
    """One write, runnable against a Table and against a model."""

    table: str
    kind: str
    rows: list[Row]
    pred: Pred | None = None
    sets: list[SetValue] | None = None
    clauses: tuple[list[Clause], list[Clause]] | None = None

    def run(self, t: Table) -> int | None:
        """Run it; the write id it used (None if it wrote nothing)."""
        data = pa.Table.from_pylist(self.rows, schema=schema_of(self.table))
        if self.kind == "insert":
            return t.insert(data).write_id
        if self.kind == "overwrite":
            return t.insert_overwrite(data).write_id
        if self.kind == "delete":
            assert self.pred is not None
            return t.delete(self.pred.sql).write_id
        if self.kind == "update":
            assert self.pred is not None and self.sets is not None
            return t.update(self.pred.sql, {s.column: s.sql for s in self.sets}).write_id
        assert self.kind == "merge" and self.clauses is not None
        builder = t.merge(data, "t.id = s.id")
        for clause in [*self.clauses[0], *self.clauses[1]]:
            builder = clause.add(builder, self.table)
        result = builder.execute()
        fired = sum(result.metrics[k] for k in ("num_target_rows_updated",
                                                "num_target_rows_deleted",
                                                "num_target_rows_inserted"))
        # a MERGE takes a write id when the table has files to match (like DELETE and
        # UPDATE) or when it inserts: an empty MERGE into an empty table takes none
        assert result.write_id is not None or fired == 0
        return result.write_id

    def partitions(self, model: Model) -> set[str | None]:
        """The partitions (dt values; "" when unpartitioned) this statement writes to."""

        def part(row: Row) -> str | None:
            return row["dt"] if self.table == PB else ""

        if self.kind in ("insert", "overwrite"):
            if self.table == PLAIN and self.kind == "overwrite":
                return {""}  # an unpartitioned overwrite always writes a base
            return {part(r) for r in self.rows}
        if self.kind in ("delete", "update"):
            assert self.pred is not None
            return {part(r) for r in model.values() if self.pred.test(r)}
        assert self.clauses is not None
        out: set[str | None] = set()
        for s in self.rows:
            target = model.get(s["id"])
            for clause in self.clauses[0] if target is not None else self.clauses[1]:
                if clause.holds(s, target):
                    changed = target if target is not None else clause.apply(s, None, self.table)
                    assert changed is not None
                    out.add(part(changed))
                    break
        return out

    def apply(self, model: Model) -> Model:
        if self.kind == "insert":
            return {**model, **{r["id"]: r for r in self.rows}}
        if self.kind == "overwrite":
            if self.table == PB:
                replaced = {r["dt"] for r in self.rows}
                kept = {i: r for i, r in model.items() if r["dt"] not in replaced}
            else:
                kept = {}
            return {**kept, **{r["id"]: r for r in self.rows}}
        if self.kind == "delete":
            assert self.pred is not None
            return {i: r for i, r in model.items() if not self.pred.test(r)}
        if self.kind == "update":
            assert self.pred is not None and self.sets is not None
            out = dict(model)
            for i, r in model.items():
                if self.pred.test(r):
                    out[i] = {**r, **{s.column: s.value(r) for s in self.sets}}
            return out
        assert self.clauses is not None
        return model_merge(model, self.rows, *self.clauses, table=self.table)


# --- comparing -----------------------------------------------------------------------------------


def as_sorted(rows: Sequence[Row], columns: Sequence[str]) -> list[tuple[Any, ...]]:
    return sorted((tuple(r[c] for c in columns) for r in rows), key=repr)


def model_rows(model: Model, table: str) -> list[tuple[Any, ...]]:
    return as_sorted(list(model.values()), columns_of(table))


def with_ids(table: pa.Table, columns: Sequence[str]) -> list[tuple[Any, ...]]:
    out = []
    for row in table.to_pylist():
        rid = row["row__id"]
        out.append((rid["writeid"], rid["bucketid"], rid["rowid"],
                    *[row[c] for c in columns]))
    return sorted(out, key=repr)


class TableMachine(RuleBasedStateMachine):
    """Subclassed per test run with ``factory`` set to pytest's ``tmp_path_factory``."""

    factory: pytest.TempPathFactory

    def __init__(self) -> None:
        super().__init__()
        self.root: Path = self.factory.mktemp("model")
        self.wh: Warehouse = acidstore.connect(self.root / "wh")
        self.wh.create_table(PB, FULL, partition_by=["dt"], bucket_by=["id"], buckets=3)
        self.wh.create_table(PLAIN, USER)
        self.models: dict[str, Model] = {name: {} for name in TABLES}
        #: per table: (committed write id, model after it), in write id order
        self.versions: dict[str, list[tuple[int, Model]]] = {name: [(0, {})] for name in TABLES}
        self.next_id = 1

    def teardown(self) -> None:
        self.wh.close()
        shutil.rmtree(self.root, ignore_errors=True)

    # --- helpers ---------------------------------------------------------------------------------

    def table(self, name: str) -> Table:
        return self.wh.table(name)

    def numbered(self, rows: list[Row], table: str) -> list[Row]:
        out = []
        for row in rows:
            full = {"id": self.next_id, **row}
            self.next_id += 1
            out.append({c: full[c] for c in columns_of(table)})
        return out

    def committed(self, name: str, write_id: int | None, model: Model) -> None:
        if write_id is not None:
            assert write_id > self.versions[name][-1][0]
            self.versions[name].append((write_id, copy.deepcopy(model)))
        else:
            assert model == self.models[name]  # a statement that wrote nothing changed nothing
        self.models[name] = model

    def expect(self, got: pa.Table, model: Model, name: str) -> None:
        assert got.column_names == columns_of(name)
        assert as_sorted(got.to_pylist(), columns_of(name)) == model_rows(model, name)

    def merge_source(self, data: st.DataObject, name: str) -> list[Row]:
        existing = sorted(self.models[name])
        matched = data.draw(st.lists(st.sampled_from(existing), max_size=3, unique=True)
                            if existing else st.just([]), label="matched ids")
        rows = []
        for i in matched:
            rows.append({"id": i, "name": data.draw(names, label="name"),
                         "amount": data.draw(amounts, label="amount"),
                         "dt": data.draw(st.sampled_from(DTS), label="dt")})
        fresh = new_rows(min_size=0 if rows else 1, max_size=3)
        rows += self.numbered(data.draw(fresh, label="unmatched"), PB)
        return [{c: r[c] for c in columns_of(name)} for r in rows]

    def draw_statement(self, data: st.DataObject, name: str) -> Statement:
        kind = data.draw(st.sampled_from(["insert", "update", "delete", "merge", "merge3",
                                          "overwrite"]), label="kind")
        if kind == "merge3":  # an update, a delete and an insert clause, in any order
            delete = data.draw(st.sampled_from([c for c in MATCHED if c.kind == "delete"]))
            update = data.draw(st.sampled_from([c for c in MATCHED if c.kind == "update"]))
            matched = last_unconditional(data.draw(st.permutations([delete, update])))
            insert = data.draw(st.sampled_from(NOT_MATCHED))
            return Statement(name, "merge", self.merge_source(data, name),
                             clauses=(matched, [insert]))
        if kind in ("insert", "overwrite"):
            size = 1 if kind == "insert" else 0
            rows = self.numbered(data.draw(new_rows(min_size=size), label="rows"), name)
            return Statement(name, kind, rows)
        if kind == "merge":
            return Statement(name, kind, self.merge_source(data, name),
                             clauses=data.draw(merge_clauses(), label="clauses"))
        existing = sorted(self.models[name])
        pred = data.draw(predicates().filter(lambda p: name == PB or not p.partitioned_only)
                         | (st.sampled_from(existing).map(lambda v: Pred(f"id = {v}",
                                                                         _eq("id", v)))
                            if existing else st.nothing()), label="predicate")
        if kind == "delete":
            return Statement(name, kind, [], pred=pred)
        return Statement(name, kind, [], pred=pred, sets=data.draw(assignments(), label="set"))

    # --- rules -----------------------------------------------------------------------------------

    @rule(data=st.data(), name=st.sampled_from(TABLES))
    def write(self, data: st.DataObject, name: str) -> None:
        """One statement in its own transaction."""
        statement = self.draw_statement(data, name)
        write_id = statement.run(self.table(name))
        event(f"{statement.kind} {'wrote' if write_id is not None else 'changed nothing'}")
        self.committed(name, write_id, statement.apply(self.models[name]))

    @rule(data=st.data(), ending=st.sampled_from(["commit", "commit", "raise", "raise midway"]))
    def transaction(self, data: st.DataObject, ending: str) -> None:
        """Several statements over both tables, one commit; or an exception inside the with
        block (at the end, or after the first statement) that aborts all of them. A statement
        writing to a partition that an earlier statement overwrote is refused (base_w would hide
        it) and aborts the transaction too."""
        statements = [self.draw_statement(data, data.draw(st.sampled_from(TABLES)))
                      for _ in range(data.draw(st.integers(2, 4), label="statements"))]
        scratch = copy.deepcopy(self.models)
        overwritten: set[tuple[str, str | None]] = set()
        txn: Transaction | None = None
        try:
            with self.wh.transaction() as txn:
                for i, statement in enumerate(statements):
                    bound = txn.table(statement.table)
                    touched = {(statement.table, p)
                               for p in statement.partitions(scratch[statement.table])}
                    if touched & overwritten:
                        with pytest.raises(InvalidInputError, match="already overwrote"):
                            statement.run(bound)
                        assert txn.state == "aborted"
                        event("transaction: refused a write after an overwrite")
                        raise _AbortError
                    if statement.kind == "overwrite":
                        overwritten |= touched
                    statement.run(bound)
                    scratch[statement.table] = statement.apply(scratch[statement.table])
                    # the transaction reads its own writes
                    self.expect(bound.to_arrow(), scratch[statement.table], statement.table)
                    if ending == "raise midway" and i == 0:
                        raise _AbortError
                if ending == "raise":
                    raise _AbortError
                info = txn.commit()
        except _AbortError:
            assert txn is not None and txn.state == "aborted"
            event(f"transaction: aborted ({ending})")
            return
        assert txn.state == "committed"
        event(f"transaction: committed, {len(info.write_ids)} table(s) written")
        for name in TABLES:
            self.committed(name, info.write_ids.get(name), scratch[name])

    @rule(data=st.data(), name=st.sampled_from(TABLES))
    def merge_cardinality_violation(self, data: st.DataObject, name: str) -> None:
        """Two source rows match one target row: refused, nothing changes."""
        if not self.models[name]:
            return
        target = data.draw(st.sampled_from(sorted(self.models[name])))
        row = self.models[name][target]
        source = pa.Table.from_pylist([row, {**row, "name": "twice"}], schema=schema_of(name))
        with pytest.raises(MergeCardinalityError):
            (self.table(name).merge(source, "t.id = s.id")
             .when_matched_update({"name": "s.name"}).when_not_matched_insert_all().execute())

    @rule(data=st.data(), name=st.sampled_from(TABLES))
    def reader_keeps_its_snapshot(self, data: st.DataObject, name: str) -> None:
        """A streaming reader opened before a write returns the table as it was."""
        statement = self.draw_statement(data, name)  # draw first: a draw may end the example
        reader = self.table(name).to_batches()
        before = copy.deepcopy(self.models[name])
        self.committed(name, statement.run(self.table(name)), statement.apply(before))
        self.expect(reader.read_all(), before, name)

    @precondition(lambda self: any(len(v) > 1 for v in self.versions.values()))
    @rule(data=st.data(), name=st.sampled_from(TABLES))
    def time_travel(self, data: st.DataObject, name: str) -> None:
        """``as_of`` a write id (committed, aborted or never used) or a commit time."""
        t = self.table(name)
        versions = self.versions[name]
        high = versions[-1][0]
        as_of = data.draw(st.integers(0, high + 1), label="as_of write id")
        now = t.snapshot()
        if as_of > now.high_watermark:
            # a version the table never had: refused, not answered with today's rows
            with pytest.raises(InvalidInputError, match="after its latest write id"):
                t.to_arrow(as_of=as_of)
            return
        expected = [m for w, m in versions if w <= as_of][-1]
        self.expect(t.to_arrow(as_of=as_of), expected, name)
        # the same snapshot given to both readers directly
        earlier = ValidWriteIdList(name, min(as_of, now.high_watermark), (),
                                   tuple(w for w in now.aborted_write_ids if w <= as_of))
        for reader in ("vectorized", "merge"):
            got = acidstore.read_directory(t.location, handle_of(t).info.schema, reader=reader,
                                           write_ids=earlier)
            assert as_sorted(got.to_pylist(), columns_of(name)) == model_rows(expected, name)
        # as_of a commit time: every write id committed by then
        history = t.history().to_pylist()
        if history:
            moment: datetime = data.draw(st.sampled_from(history), label="commit")["commit_time"]
            upto = max(h["write_id"] for h in history if h["commit_time"] <= moment)
            expected = [m for w, m in versions if w <= upto][-1]
            self.expect(t.to_arrow(as_of=moment), expected, name)

    # --- the invariant ---------------------------------------------------------------------------

    @invariant()
    def tables_equal_models(self) -> None:
        for name in TABLES:
            t = self.table(name)
            columns = columns_of(name)
            got = t.to_arrow(with_row_id=True)
            self.expect(got.drop_columns(["row__id"]), self.models[name], name)
            rows = with_ids(got, columns)
            snapshot = t.snapshot()
            for reader in ("vectorized", "merge"):
                direct = acidstore.read_directory(t.location, handle_of(t).info.schema,
                                                  reader=reader, write_ids=snapshot,
                                                  with_row_id=True)
                assert with_ids(direct, columns) == rows, reader
            # history lists exactly the committed write ids that the model recorded
            assert t.history().column("write_id").to_pylist() == [
                w for w, _ in self.versions[name][1:]]


class _AbortError(Exception):
    """Raised inside a ``with wh.transaction()`` block to abort it."""


def test_table_matches_model(tmp_path_factory: pytest.TempPathFactory) -> None:
    class Machine(TableMachine):
        factory = tmp_path_factory

    profile = settings.default
    assert profile is not None
    # the profile's example count; fewer steps per example than hypothesis's default 50
    run_state_machine_as_test(Machine, settings=settings(
        stateful_step_count=min(profile.stateful_step_count, 15)))
