"""Differential property test of the two merge-on-read readers against a plain-Python model.

Each example is a random table history written exactly as Hive writes it: write ids doing
inserts (several statements, several buckets, dense row ids per write id/bucket/statement),
deletes and updates of rows visible to the writer (split-update: a delete event routed to the
``delete_delta_*/bucket_N`` of the row's bucket plus a new insert), aborted and open write ids,
optional original files at the partition root (synthetic ROW__IDs), optionally one
multi-transaction streaming ``delta_x_y`` whose row ids restart at 0 for each write id, and
optionally a minor compaction of some write ids' deltas, as Hive's compactor writes it.

The model is a dict ROW__ID -> (inserting write id, row) plus the deleting write ids of each
ROW__ID, and applies spec 8.1 literally: a row is visible iff its write id is valid and no valid
delete event carries its ROW__ID. Both readers must return exactly the model's rows (as a
multiset, ROW__IDs included) and the same batches in the same order, for the latest snapshot and
for earlier snapshots (time travel), with the delete registry forced to fall back to the merge,
with projection and with filters.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from acidfiles import (
    SCHEMA,
    Event,
    Key,
    bucket_property,
    events_table,
    write_dir_stripes,
    write_original,
)
from hypothesis import given
from hypothesis import strategies as st

import acidstore
from acidstore.format.layout import ParsedDelta, delta_name, original_file_name
from acidstore.format.orc.codec import decode
from acidstore.format.orc.schema import DELETE, INSERT
from acidstore.format.writeids import ValidWriteIdList

Row = dict[str, Any]
COLUMNS = ("id", "name", "amount")


@dataclass
class History:
    """What was written, and the model's knowledge of it."""

    buckets: list[int]
    #: original file name -> its rows (in file order)
    originals: dict[str, list[Row]] = field(default_factory=dict)
    #: directory name -> bucket id -> events in file order
    dirs: dict[str, dict[int, list[Event]]] = field(default_factory=dict)
    #: every inserted row: ROW__ID -> (write id of the insert, row); originals have write id 0
    inserts: dict[Key, tuple[int, Row]] = field(default_factory=dict)
    #: ROW__ID -> write ids of the delete events carrying it
    deletes: dict[Key, list[int]] = field(default_factory=lambda: defaultdict(list))
    max_write_id: int = 0
    aborted: set[int] = field(default_factory=set)
    open: set[int] = field(default_factory=set)
    rows_per_stripe: int | None = None

    def add_events(self, directory: str, bucket: int, events: list[Event]) -> None:
        self.dirs.setdefault(directory, {}).setdefault(bucket, []).extend(events)


def model_rows(history: History, valid: Callable[[int], bool]) -> dict[Key, Row]:
    """Spec 8.1, literally."""
    out: dict[Key, Row] = {}
    for key, (write_id, row) in history.inserts.items():
        if not valid(write_id):
            continue
        if any(valid(d) for d in history.deletes.get(key, [])):
            continue
        out[key] = row
    return out


def snapshot_valid(snapshot: ValidWriteIdList) -> Callable[[int], bool]:
    hwm, invalid = snapshot.high_watermark, set(snapshot.exceptions)

    def valid(write_id: int) -> bool:
        return write_id <= hwm and write_id not in invalid
    return valid


# --- generating a history -------------------------------------------------------------------

names = st.one_of(st.none(), st.text("abcxyz", min_size=0, max_size=3))
amounts = st.one_of(st.none(), st.integers(-50, 50).map(float))


@st.composite
def histories(draw: st.DrawFn) -> History:
    buckets = sorted(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True)))
    history = History(buckets, rows_per_stripe=draw(st.sampled_from([None, 1, 2, 3])))
    next_id = iter(range(1, 10_000))

    def new_row() -> Row:
        return {"id": next(next_id), "name": draw(names), "amount": draw(amounts)}

    # rows visible to a new writer: committed inserts not deleted by a committed write
    visible: dict[Key, Row] = {}

    # original files at the partition root: synthetic ROW__IDs (0, V1(bucket, 0), ordinal in
    # the logical bucket), the ordinal running across the bucket's files in path order
    if draw(st.booleans()):
        for bucket in draw(st.lists(st.sampled_from(buckets), min_size=1, max_size=2,
                                    unique=True)):
            copies = draw(st.lists(st.sampled_from([0, 1, 2, 10]), min_size=1, max_size=3,
                                   unique=True))
            files = {original_file_name(bucket, c): [new_row()
                                                     for _ in range(draw(st.integers(0, 4)))]
                     for c in copies}
            offset = 0
            prop = bucket_property(bucket, 0)
            for name in sorted(files):  # "000000_0_copy_10" < "000000_0_copy_2"
                history.originals[name] = files[name]
                for row in files[name]:
                    key = (0, prop, offset)
                    history.inserts[key] = (0, row)
                    visible[key] = row
                    offset += 1

    n = draw(st.integers(1, 6))
    history.max_write_id = n
    streaming: tuple[int, int] | None = None
    if n >= 2 and draw(st.booleans()):
        low = draw(st.integers(1, n - 1))
        streaming = (low, draw(st.integers(low + 1, n)))
    status = {w: draw(st.sampled_from(["committed", "committed", "committed", "aborted",
                                        "open"]))
              for w in range(1, n + 1)}
    history.aborted = {w for w, s in status.items() if s == "aborted"}
    history.open = {w for w, s in status.items() if s == "open"}

    write_id = 1
    while write_id <= n:
        if streaming is not None and write_id == streaming[0]:
            low, high = streaming
            name = delta_name(low, high)
            for bucket in draw(st.lists(st.sampled_from(buckets), min_size=1, unique=True)):
                prop = bucket_property(bucket, 0)
                events: list[Event] = []
                for w in range(low, high + 1):
                    for row_id in range(draw(st.integers(0, 3))):  # restarts per write id
                        row = new_row()
                        events.append((INSERT, w, prop, row_id, w, row))
                        history.inserts[(w, prop, row_id)] = (w, row)
                        if status[w] == "committed":
                            visible[(w, prop, row_id)] = row
                if events:
                    history.add_events(name, bucket, events)
            write_id = high + 1
            continue
        statements = draw(st.integers(1, 3))
        no_suffix = statements == 1 and draw(st.integers(0, 4)) == 0  # pre-Hive-3 names
        mine = dict(visible)  # what this write sees: its own earlier statements included
        for stmt in range(statements):
            kind = draw(st.sampled_from(["insert", "delete", "update"]))
            if kind != "insert" and not mine:
                kind = "insert"
            dir_stmt = -1 if no_suffix else stmt
            inserted: dict[int, list[Row]] = defaultdict(list)
            if kind == "insert":
                for bucket in draw(st.lists(st.sampled_from(buckets), min_size=1, max_size=2,
                                            unique=True)):
                    inserted[bucket] = [new_row() for _ in range(draw(st.integers(1, 4)))]
            else:
                # often only rows of this write's earlier statements: its own deletes
                own: list[Key] = sorted(k for k in mine if k[0] == write_id)
                only_own: bool = bool(own) and draw(st.booleans())
                pool = own if only_own else sorted(mine)
                targets = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3,
                                        unique=True))
                by_bucket: dict[int, list[Key]] = defaultdict(list)
                for key in targets:
                    by_bucket[decode(key[1])[0]].append(key)
                for bucket, keys in sorted(by_bucket.items()):
                    events = [(DELETE, *key, write_id, None) for key in sorted(keys)]
                    history.add_events(delta_name(write_id, write_id, dir_stmt, delete=True),
                                       bucket, events)
                    for key in keys:
                        history.deletes[key].append(write_id)
                        row = mine.pop(key)
                        if kind == "update":  # the new version goes to the row's bucket
                            inserted[bucket].append({**row, "amount": draw(amounts)})
            prop_stmt = max(dir_stmt, 0)
            for bucket, rows in sorted(inserted.items()):
                prop = bucket_property(bucket, prop_stmt)
                events = []
                for row_id, row in enumerate(rows):
                    events.append((INSERT, write_id, prop, row_id, write_id, row))
                    history.inserts[(write_id, prop, row_id)] = (write_id, row)
                    mine[(write_id, prop, row_id)] = row
                history.add_events(delta_name(write_id, write_id, dir_stmt), bucket, events)
        if status[write_id] == "committed":
            visible = mine
        write_id += 1
    if draw(st.integers(0, 3), label="minor compaction") > 0:
        minor_compaction(history, draw)
    return history


def minor_compaction(history: History, draw: st.DrawFn) -> None:
    """Merge the deltas of write ids lo..hi as Hive's minor compactor does (spec §10.3):
    ``delta_lo_hi_vT`` and ``delete_delta_lo_hi_vT`` (no statement id), every event of a
    valid write id copied unchanged in key order, aborted ones dropped, deletes not applied.
    Often lo == hi, one write id whose statements may delete rows of its own earlier
    statements. The merged directories stay (obsolete, not yet cleaned) or go."""
    below_open = min(history.open, default=history.max_write_id + 1) - 1
    if below_open < 1:
        return
    # mostly one write id of several statements alone: the shape whose own deletes a
    # statement-id rule can lose
    several = sorted({p.min_write_id for p in map(ParsedDelta.parse, history.dirs)
                      if p.statement_id > 0 and p.max_write_id <= below_open})
    if several and draw(st.integers(0, 2)) > 0:
        lo = hi = draw(st.sampled_from(several), label="compacted write id")
    else:
        lo = draw(st.integers(1, below_open), label="compacted from")
        hi = draw(st.integers(lo, below_open), label="compacted to")
    merged = []
    for name in history.dirs:
        parsed = ParsedDelta.parse(name)
        if parsed.max_write_id < lo or parsed.min_write_id > hi:
            continue
        if parsed.min_write_id < lo or parsed.max_write_id > hi:
            return  # a streaming delta straddling the range: Hive compacts whole directories
        merged.append(name)
    if not merged:
        return
    txn = 1000 + lo  # the compaction's visibility txn; read_directory takes it as committed
    outputs: dict[bool, dict[int, list[Event]]] = {False: {}, True: {}}
    for name in merged:
        kind = ParsedDelta.parse(name).delete
        for bucket, events in history.dirs[name].items():
            outputs[kind].setdefault(bucket, []).extend(
                e for e in events if e[4] not in history.aborted)
    for delete, files in outputs.items():
        out = {b: sorted(e, key=lambda e: (e[1], e[2], e[3], -e[4]))
               for b, e in files.items() if e}
        if out:
            history.dirs[delta_name(lo, hi, visibility_txn_id=txn, delete=delete)] = out
    # Not kept: an input named like the output but for its _v (a streaming delta_lo_hi, or a
    # pre-Hive-3 delta_w_w) would be read as the output's twin, its rows twice (Hive 4
    # compares the visibility txn too; acidstore.format.directory does not yet)
    twin = any(ParsedDelta.parse(n).statement_id < 0 and
               (ParsedDelta.parse(n).min_write_id, ParsedDelta.parse(n).max_write_id) == (lo, hi)
               for n in merged)
    if twin or draw(st.booleans(), label="cleaned"):
        for name in merged:
            del history.dirs[name]


def write_history(history: History, root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, rows in history.originals.items():
        write_original(root / name, rows, rows_per_stripe=history.rows_per_stripe)
    for name, files in history.dirs.items():
        write_dir_stripes(root, name, {b: events_table(e) for b, e in files.items()},
                          rows_per_stripe=history.rows_per_stripe)


# --- comparing ------------------------------------------------------------------------------


def as_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """A table's rows as sortable tuples (ROW__ID first when present)."""
    out = []
    for row in table.to_pylist():
        rid = row.pop("row__id", None)
        key = () if rid is None else (rid["writeid"], rid["bucketid"], rid["rowid"])
        out.append((key, *[repr(row[c]) for c in table.column_names if c != "row__id"]))
    return sorted(out)


def expected_rows(model: Mapping[Key, Row], columns: Sequence[str], with_row_id: bool,
                  keep: Callable[[Row], bool] = lambda _: True) -> list[tuple[Any, ...]]:
    return sorted(((key if with_row_id else ()), *[repr(row[c]) for c in columns])
                  for key, row in model.items() if keep(row))


def read_both(root: Path, **kwargs: Any) -> pa.Table:
    """Read with both readers; they must agree batch for batch, in the same order.

    The schema is given because a snapshot may select no file to infer it from."""
    vectorized = acidstore.read_directory(root, SCHEMA, reader="vectorized", **kwargs)
    merged = acidstore.read_directory(root, SCHEMA, reader="merge", **kwargs)
    assert vectorized.schema == merged.schema
    assert vectorized.to_pylist() == merged.to_pylist()
    return vectorized


FILTERS: dict[str, tuple[str, Callable[[Row], bool]]] = {
    "amount": ("amount > 0", lambda r: r["amount"] is not None and r["amount"] > 0),
    "id_mod": ("id % 3 = 1", lambda r: r["id"] % 3 == 1),
    "name": ("name LIKE 'a%' OR name IS NULL",
             lambda r: r["name"] is None or r["name"].startswith("a")),
    "nothing": ("id < 0", lambda r: False),
}


@given(history=histories(), data=st.data())
def test_readers_match_model(tmp_path_factory: pytest.TempPathFactory, history: History,
                             data: st.DataObject) -> None:
    # a fresh directory per example (tmp_path would be shared by all examples)
    tmp = tmp_path_factory.mktemp("history")
    try:
        root = tmp / "t"
        write_history(history, root)
        n = history.max_write_id
        latest = ValidWriteIdList("default.t", n, tuple(sorted(history.open)),
                                  tuple(sorted(history.aborted)))
        model = model_rows(history, snapshot_valid(latest))

        # the latest snapshot, given as Hive's string
        got = read_both(root, write_ids=str(latest), with_row_id=True)
        assert got.column_names == [*COLUMNS, "row__id"]
        assert as_rows(got) == expected_rows(model, COLUMNS, True)

        # streaming the scan gives the same batches as the parallel to_table
        scan = acidstore.scan_directory(root, SCHEMA, write_ids=latest, with_row_id=True)
        assert pa.Table.from_batches(list(scan.to_batches()), schema=scan.schema).equals(got)

        # no registry at all: every split with a delete falls back to the merge
        fallback = acidstore.read_directory(root, SCHEMA, write_ids=latest, with_row_id=True,
                                            delete_event_limit=0)
        assert fallback.to_pylist() == got.to_pylist()

        # projection (in the caller's order), with or without ROW__IDs
        columns = data.draw(st.lists(st.sampled_from(COLUMNS), min_size=1, unique=True),
                            label="columns")
        with_row_id = data.draw(st.booleans(), label="with_row_id")
        projected = read_both(root, write_ids=latest, columns=columns, with_row_id=with_row_id)
        assert projected.column_names == columns + (["row__id"] if with_row_id else [])
        assert as_rows(projected) == expected_rows(model, columns, with_row_id)

        # a SQL filter on columns that are not all projected
        sql, keep = FILTERS[data.draw(st.sampled_from(sorted(FILTERS)), label="filter")]
        filtered = read_both(root, write_ids=latest, columns=["id"], filter=sql,
                             with_row_id=True)
        assert as_rows(filtered) == expected_rows(model, ["id"], True, keep)
        # and the same as a pyarrow expression
        threshold = data.draw(st.integers(0, 12), label="id threshold")
        expr = read_both(root, write_ids=latest, filter=pc.field("id") >= threshold)
        assert as_rows(expr) == expected_rows(model, COLUMNS, False,
                                              lambda r: r["id"] >= threshold)

        # time travel: an earlier watermark, where some committed writes may still be open
        hwm = data.draw(st.integers(0, n), label="earlier hwm")
        committed = [w for w in range(1, hwm + 1)
                     if w not in history.open and w not in history.aborted]
        still_open = data.draw(st.lists(st.sampled_from(committed), unique=True)
                               if committed else st.just([]), label="still open")
        earlier = ValidWriteIdList(
            "default.t", hwm,
            tuple(sorted({w for w in history.open if w <= hwm} | set(still_open))),
            tuple(sorted(w for w in history.aborted if w <= hwm)))
        past = read_both(root, write_ids=earlier, with_row_id=True)
        assert as_rows(past) == expected_rows(model_rows(history, snapshot_valid(earlier)),
                                              COLUMNS, True)
        past_fallback = acidstore.read_directory(root, SCHEMA, write_ids=str(earlier),
                                                 with_row_id=True, delete_event_limit=0)
        assert past_fallback.to_pylist() == past.to_pylist()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- fixed examples the property relies on ------------------------------------------------------


def test_model_example_update_within_one_write(tmp_path: Path) -> None:
    """A committed write inserts in statement 0 and deletes one of those rows in statement 1:
    delete_delta_2_2_1 must apply to delta_2_2_0 (same write id, later statement)."""
    history = History([0])
    p0 = bucket_property(0, 0)
    rows = [{"id": 1, "name": "a", "amount": 1.0}, {"id": 2, "name": "b", "amount": 2.0}]
    history.add_events(delta_name(2, 2, 0), 0,
                       [(INSERT, 2, p0, i, 2, r) for i, r in enumerate(rows)])
    history.add_events(delta_name(2, 2, 1, delete=True), 0, [(DELETE, 2, p0, 0, 2, None)])
    history.inserts = {(2, p0, 0): (2, rows[0]), (2, p0, 1): (2, rows[1])}
    history.deletes[(2, p0, 0)].append(2)
    history.max_write_id = 2
    write_history(history, tmp_path / "t")
    got = read_both(tmp_path / "t", with_row_id=True)
    assert got.to_pylist() == [{"id": 2, "name": "b", "amount": 2.0,
                                "row__id": {"writeid": 2, "bucketid": p0, "rowid": 1}}]
    assert model_rows(history, lambda w: True) == {(2, p0, 1): rows[1]}


def test_model_example_original_copy_order(tmp_path: Path) -> None:
    """Synthetic row ids run across copies in *path* order: copy_10 sorts before copy_2."""
    root = tmp_path / "t"
    write_original(root / "000000_0", [{"id": 1, "name": None, "amount": None}])
    write_original(root / "000000_0_copy_2", [{"id": 2, "name": None, "amount": None}])
    write_original(root / "000000_0_copy_10", [{"id": 3, "name": None, "amount": None},
                                               {"id": 4, "name": None, "amount": None}])
    got = read_both(root, columns=["id"], with_row_id=True)
    p0 = bucket_property(0)
    assert sorted((r["row__id"]["rowid"], r["id"]) for r in got.to_pylist()) == [
        (0, 1), (1, 3), (2, 4), (3, 2)]
    assert {r["row__id"]["bucketid"] for r in got.to_pylist()} == {p0}
    assert {r["row__id"]["writeid"] for r in got.to_pylist()} == {0}
