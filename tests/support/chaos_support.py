"""Random DML against one small table, logged, and a checker that replays the log (issue 12).

Shared by the chaos test (several processes at once), the kill-point suite (one process dies
at a named point or by SIGKILL) and ``tests/chaos/run.py`` (a long run by hand).

Every operation is a JSON-able dict planned from a seeded RNG, so a failing run replays from
its seed. Replay is well-defined because rows carry a unique ``id`` (each worker draws fresh
ids from a range of its own) and a ``counter`` that UPDATE and MERGE increment, and because the
table is ``Serializable``: a DELETE, UPDATE or MERGE that wrote a partition conflicts with
every write committed there after its snapshot, so applying the committed operations in the
metastore's commit order is what the table must read. One documented exception is modelled
(README, conflict matrix): an INSERT OVERWRITE with write id ``W`` hides only rows written
below ``W``, so an insert with a higher write id that committed before it stays visible. That
is why the model keeps, per row, the write id of the write that last wrote it, which must also
be the ``writeid`` of its ROW__ID (compaction keeps ROW__IDs).

Each worker writes one JSON line before an operation (``begin``, with its transaction id once
it has one) and one after (``end``: committed with its write id, skipped, or the error). A
process that dies leaves a ``begin`` without an ``end``: the metastore alone decides whether
that transaction landed, and the checker replays it exactly when it did.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import (
    AcidStoreError,
    CommitFailedError,
    CommitStateUnknownError,
    DataError,
)
from acidstore.format.directory import acid_state
from compaction import Cleaner, compact

TABLE = "db.chaos"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("k", pa.int64()),
                    pa.field("counter", pa.int64()), pa.field("dt", pa.string())])
PARTITIONS = ("a", "b")
KEYS = 4
#: worker ``w`` draws its new ids from ``(w + 1) * ID_SPAN`` on; the seed rows are below
ID_SPAN = 1_000_000
DML = ("insert", "update", "delete", "merge", "overwrite")
#: (operation, weight) of a random plan
WEIGHTS = (("insert", 6), ("update", 5), ("delete", 2), ("merge", 4), ("overwrite", 1),
           ("compact", 2), ("clean", 1))

#: the errors after which a worker runs the same operation again, and how often at most
CONFLICTS = frozenset({"ConcurrentAppendError", "ConcurrentDeleteReadError",
                       "ConcurrentDeleteDeleteError"})
RETRIES = 12

#: one row of the model: k, counter, dt, write id of the write that last wrote it
Row = tuple[int, int, str, int]
Place = str | tuple[str, str]


def connect(place: Place, **options: Any) -> Warehouse:
    """Open the warehouse as a separate program would (a directory, or one plus a URL)."""
    if isinstance(place, tuple):
        return acidstore.connect(place[0], metastore=place[1], **options)
    return acidstore.connect(place, **options)


def create_table(wh: Warehouse, seed_rows: int = 12) -> Table:
    """The chaos table, Serializable, with ``seed_rows`` rows in both partitions and buckets."""
    t = wh.create_table(TABLE, SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2,
                        properties={"acidstore.isolationLevel": "Serializable"})
    if seed_rows:
        t.insert(rows_table([(i, i % KEYS, PARTITIONS[i % 2]) for i in range(seed_rows)]))
    return t


def rows_table(rows: Iterable[Iterable[Any]]) -> pa.Table:
    """(id, k, dt) triples as new rows (counter 0)."""
    items = [tuple(r) for r in rows]
    return pa.table({"id": pa.array([r[0] for r in items], pa.int64()),
                     "k": pa.array([r[1] for r in items], pa.int64()),
                     "counter": pa.array([0] * len(items), pa.int64()),
                     "dt": pa.array([r[2] for r in items], pa.string())}, schema=SCHEMA)


# --- planning -----------------------------------------------------------------------------------


@dataclass
class Planner:
    """Draws the next operation of one worker from its own seeded RNG. ``known`` is what the
    worker last read (id -> (k, dt)), for MERGE sources that match existing rows."""

    worker: int
    seed: int
    rng: random.Random = field(init=False)
    next_id: int = field(init=False)
    version: int = 0
    app_committed: bool = False
    known: dict[int, tuple[int, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.next_id = (self.worker + 1) * ID_SPAN

    def fresh(self, count: int, dt: str | None = None) -> list[list[Any]]:
        out = []
        for _ in range(count):
            out.append([self.next_id, self.rng.randrange(KEYS),
                        dt or self.rng.choice(PARTITIONS)])
            self.next_id += 1
        return out

    def plan(self) -> dict[str, Any]:
        rng = self.rng
        kind = rng.choices([k for k, _ in WEIGHTS], [w for _, w in WEIGHTS])[0]
        if kind == "insert":
            op: dict[str, Any] = {"op": "insert", "rows": self.fresh(rng.randint(1, 4))}
            if rng.random() < 0.3:  # an idempotent write; sometimes a retry of the last one
                retry = self.version > 0 and self.app_committed and rng.random() < 0.4
                self.version += 0 if retry else 1
                op.update(app=f"app-{self.worker}", version=self.version, retry=retry)
            return op
        if kind in ("update", "delete"):
            return {"op": kind, "dt": rng.choice(PARTITIONS), "k": rng.randrange(KEYS)}
        if kind == "merge":
            existing = rng.sample(sorted(self.known), min(len(self.known), rng.randint(0, 2)))
            return {"op": "merge", "rows": [[i, *self.known[i]] for i in existing]
                    + self.fresh(rng.randint(1, 2))}
        if kind == "overwrite":
            dt = rng.choice(PARTITIONS)
            return {"op": "overwrite", "dt": dt, "rows": self.fresh(rng.randint(1, 3), dt)}
        if kind == "compact":
            return {"op": "compact", "kind": rng.choice(["minor", "major"])}
        return {"op": "clean"}


# --- running ------------------------------------------------------------------------------------


class Log:
    """One worker's JSON lines; each line is flushed before the next step starts, so a
    process killed at any moment leaves every line it wrote before (the OS has them)."""

    def __init__(self, path: str | Path, worker: int) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())
        self.worker = worker

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps({"worker": self.worker, **record}) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _statement(t: Table, op: dict[str, Any]) -> Any:
    kind = op["op"]
    if kind == "insert":
        data = rows_table(op["rows"])
        if "app" in op:
            return t.insert(data, app_id=op["app"], version=op["version"])
        return t.insert(data)
    if kind == "overwrite":
        return t.insert_overwrite(rows_table(op["rows"]))
    where = f"dt = '{op.get('dt')}' AND k = {op.get('k')}"
    if kind == "update":
        return t.update(where, {"counter": "counter + 1"})
    if kind == "delete":
        return t.delete(where)
    return (t.merge(rows_table(op["rows"]), "t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update({"counter": "t.counter + 1"})
            .when_not_matched_insert_all().execute())


def _failure(exc: BaseException) -> dict[str, Any]:
    return {"outcome": "failed", "error": type(exc).__name__, "message": str(exc)[:500],
            "typed": isinstance(exc, AcidStoreError),
            "commit_failed": isinstance(exc, CommitFailedError),
            "state_unknown": isinstance(exc, CommitStateUnknownError),
            "data_error": isinstance(exc, DataError),
            "traceback": "" if isinstance(exc, AcidStoreError) else traceback.format_exc()}


def run_dml(wh: Warehouse, op: dict[str, Any], log: Log, seq: int) -> None:
    """One DML statement in an explicit transaction whose id is logged before it writes."""
    try:
        txn = wh.transaction()
    except Exception as exc:  # (a busy metastore): typed, logged, nothing was written
        log.write({"event": "begin", "seq": seq, "op": op, "txn": None})
        log.write({"event": "end", "seq": seq, "txn": None, **_failure(exc)})
        return
    log.write({"event": "begin", "seq": seq, "op": op, "txn": txn.txn_id})
    try:
        result = _statement(txn.table(TABLE), op)
        txn.commit()
        end = {"outcome": "skipped" if result.skipped else "committed",
               "write_id": result.write_id,
               "changed": result.rows_inserted + result.rows_updated + result.rows_deleted,
               "updated": result.rows_updated, "deleted": result.rows_deleted,
               "inserted": result.rows_inserted, "skip_txn": result.txn_id}
    except Exception as exc:  # everything is logged; the checker judges it
        if txn.state == "open":
            with contextlib.suppress(Exception):  # the statement's error is what is logged
                txn.abort(f"statement failed: {exc}")
        end = _failure(exc)
    log.write({"event": "end", "seq": seq, "txn": txn.txn_id, **end})


def run_op(wh: Warehouse, op: dict[str, Any], log: Log, seq: int) -> None:
    if op["op"] in DML:
        run_dml(wh, op, log, seq)
        return
    log.write({"event": "begin", "seq": seq, "op": op, "txn": None})
    try:
        if op["op"] == "compact":
            result = compact(wh.table(TABLE), op["kind"])
            end: dict[str, Any] = {"outcome": "committed" if result.txn_id else "nothing",
                                   "compaction_txn": result.txn_id}
        else:
            removed = Cleaner(wh, retention_seconds=0).run().removed
            end = {"outcome": "committed", "removed": len(removed)}
    except Exception as exc:
        end = _failure(exc)
    log.write({"event": "end", "seq": seq, "txn": None, **end})


def read_check(wh: Warehouse, planner: Planner, log: Log, seq: int) -> None:
    """A read between operations: ids and ROW__IDs (per partition) unique; what it saw
    feeds MERGE plans."""
    try:
        got = wh.table(TABLE).to_arrow(with_row_id=True)
        ids = got.column("id").to_pylist()
        keys = row_ids(got)
        if len(set(ids)) != len(ids) or len(set(keys)) != len(keys):
            log.write({"event": "read", "seq": seq, "outcome": "duplicates",
                       "ids": len(ids), "unique_ids": len(set(ids)),
                       "unique_row_ids": len(set(keys))})
        planner.known = {i: (k, dt) for i, k, dt in zip(
            ids, got.column("k").to_pylist(), got.column("dt").to_pylist(), strict=True)}
    except Exception as exc:
        log.write({"event": "read", "seq": seq, **_failure(exc)})


def chaos_worker(place: Place, worker: int, seed: int, ops: int, log_path: str,
                 txn_timeout: float = 300.0, start: Any = None) -> None:
    """``ops`` random operations of one process, each followed by a read; all logged. With
    ``start`` (an Event or Barrier), waits for it so that the workers begin together."""
    wh = connect(place, txn_timeout=txn_timeout)
    log = Log(log_path, worker)
    planner = Planner(worker, seed)
    if start is not None:
        start.wait(60)
    read_check(wh, planner, log, -1)
    retry: dict[str, Any] | None = None
    seq = planned = 0
    while planned < ops or retry:
        op = retry or planner.plan()
        planned += retry is None
        run_op(wh, op, log, seq)
        outcome = _last_end(log_path, seq)
        if "app" in op:
            planner.app_committed = outcome.get("outcome") == "committed"
        retry = _retried(op, outcome)
        read_check(wh, planner, log, seq)
        seq += 1
    log.write({"event": "done"})
    log.close()
    wh.close()


def _last_end(log_path: str, seq: int) -> dict[str, Any]:
    with open(log_path, encoding="utf-8") as f:
        for line in reversed(f.read().splitlines()):
            record = json.loads(line)
            if record.get("event") == "end" and record.get("seq") == seq:
                return dict(record)
    return {}


def _retried(op: dict[str, Any], end: dict[str, Any]) -> dict[str, Any] | None:
    """The operation again after a write conflict, as an application retries one, at most
    ``RETRIES`` times; a retry is an operation of its own (a new ``seq``) beside the ``ops``
    planned ones. Without retries a Serializable MERGE (it reads both partitions) loses to a
    concurrent commit almost every time, and on a slow machine a run committed none at all.
    A conflict means another worker committed, and workers that finished their plan stop
    competing, so a statement retried often enough lands."""
    if end.get("error") not in CONFLICTS or op.get("tries", 0) >= RETRIES:
        return None
    return {**op, "tries": op.get("tries", 0) + 1}


def spawned_worker(place: Place, worker: int, seed: int, ops: int, log_path: str,
                   barrier: Any, reports: Any) -> None:
    """``chaos_worker`` under ``process_support.run_spawned``."""
    try:
        chaos_worker(place, worker, seed, ops, log_path, start=barrier)
        reports.put(("ok", worker, None))
    except BaseException:
        barrier.abort()
        reports.put(("error", worker, traceback.format_exc()))


# --- checking -----------------------------------------------------------------------------------


@dataclass
class Entry:
    """One logged operation: its plan, transaction id and outcome (None: the process died)."""

    worker: int
    seq: int
    op: dict[str, Any]
    txn: int | None
    end: dict[str, Any] | None = None


@dataclass
class Summary:
    """What a checked run did: outcomes per (operation, outcome) and error names."""

    outcomes: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    committed: int = 0


def load(paths: Iterable[str | Path]) -> tuple[list[Entry], list[dict[str, Any]]]:
    """The logged operations of every worker, and their read records."""
    entries: dict[tuple[int, int], Entry] = {}
    reads: list[dict[str, Any]] = []
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.endswith("\n"):
                    continue  # half a line of a killed process: its begin is what counts
                record = json.loads(line)
                key = (record["worker"], record.get("seq", -2))
                if record["event"] == "begin":
                    entries[key] = Entry(record["worker"], record["seq"], record["op"],
                                         record["txn"])
                elif record["event"] == "end":
                    entries[key].end = record
                elif record["event"] == "read":
                    reads.append(record)
    return list(entries.values()), reads


def model_of(rows: Iterable[dict[str, Any]]) -> dict[int, Row]:
    """What a read returned, as the model holds it (the write id is the ROW__ID's)."""
    out: dict[int, Row] = {}
    for r in rows:
        assert r["id"] not in out, f"id {r['id']} read twice"
        out[r["id"]] = (r["k"], r["counter"], r["dt"], r["row__id"]["writeid"])
    return out


def read_model(t: Table) -> dict[int, Row]:
    """The table's rows; ids and ROW__IDs must be unique."""
    got = t.to_arrow(with_row_id=True)
    keys = row_ids(got)
    assert len(set(keys)) == len(keys), "a ROW__ID is read twice in one partition"
    return model_of(got.to_pylist())


def row_ids(got: pa.Table) -> list[tuple[str, int, int, int]]:
    """(partition, ROW__ID) of each row read: a ROW__ID is unique within its partition."""
    return [(dt, r["writeid"], r["bucketid"], r["rowid"]) for dt, r in zip(
        got.column("dt").to_pylist(), got.column("row__id").to_pylist(), strict=True)]


def apply(state: dict[int, Row], op: dict[str, Any], write_id: int | None) -> int:
    """Apply a committed operation to the model; returns the rows it changed."""
    kind = op["op"]
    if kind not in DML:
        return 0
    assert write_id is not None
    if kind == "insert":
        for i, k, dt in op["rows"]:
            assert i not in state, f"insert of id {i}, which exists"
            state[i] = (k, 0, dt, write_id)
        return len(op["rows"])
    if kind == "overwrite":  # hides what was written below its write id (a base_W)
        for i in [i for i, r in state.items() if r[2] == op["dt"] and r[3] < write_id]:
            del state[i]
        for i, k, dt in op["rows"]:
            state[i] = (k, 0, dt, write_id)
        return len(op["rows"])
    if kind in ("update", "delete"):
        hit = [i for i, r in state.items() if r[2] == op["dt"] and r[0] == op["k"]]
        for i in hit:
            if kind == "delete":
                del state[i]
            else:
                k, counter, dt, _ = state[i]
                state[i] = (k, counter + 1, dt, write_id)
        return len(hit)
    changed = 0
    for i, k, dt in op["rows"]:  # merge on id
        if i in state:
            kk, counter, ddt, _ = state[i]
            state[i] = (kk, counter + 1, ddt, write_id)
        else:
            state[i] = (k, 0, dt, write_id)
        changed += 1
    return changed


def check(wh: Warehouse, entries: list[Entry], reads: list[dict[str, Any]],
          initial: dict[int, Row], *, before_txn: int = 0) -> Summary:
    """Prove the run: every failure typed, every outcome what the metastore says, and the
    table exactly the committed operations applied in commit order to ``initial``.
    ``before_txn``: transactions up to it made ``initial`` and are not the run's."""
    summary = Summary()
    raw = [e.end for e in entries if e.end and e.end["outcome"] == "failed"
           and not e.end["typed"]] + [r for r in reads if r.get("outcome") == "failed"
                                      and not r["typed"]]
    assert raw == [], "untyped errors:\n" + "\n".join(
        f"{r['error']}: {r['message']}\n{r['traceback']}" for r in raw)
    lost = [r for r in reads if r.get("outcome") == "duplicates" or r.get("data_error")]
    assert lost == [], f"reads during the run saw duplicates or missing data: {lost}"
    metastore = wh.metastore
    committed: list[tuple[int, Entry, int | None]] = []
    for e in entries:
        end = e.end or {}
        name = f"{e.op['op']}:{end.get('outcome', 'died')}"
        summary.outcomes[name] = summary.outcomes.get(name, 0) + 1
        if end.get("outcome") == "failed":
            summary.errors[end["error"]] = summary.errors.get(end["error"], 0) + 1
        if e.op["op"] not in DML or e.txn is None:
            continue
        info = metastore.commit_info(e.txn)
        where = f"worker {e.worker} op {e.seq} {e.op} txn {e.txn}: {end}"
        if end.get("outcome") == "committed":
            assert info is not None, f"reported committed, not in the metastore: {where}"
        elif end.get("commit_failed"):
            assert info is None, f"reported not committed, but committed: {where}"
        if info is None:
            continue
        write_id = info.write_ids.get(TABLE)
        if end.get("outcome") == "skipped":
            assert write_id is None, f"a skipped idempotent write wrote: {where}"
            continue
        if end.get("changed") == 0:
            continue  # wrote nothing: read-only, serialised at its snapshot
        if write_id is None:
            # committed without writing the table: an idempotent write whose version was
            # committed already, or a statement no file could match, whose process was
            # killed before it logged its end
            assert e.end is None, f"reported changing rows, but wrote nothing: {where}"
            continue
        committed.append((info.commit_seq, e, write_id))
    ours = {e.txn for _, e, _ in committed}
    # a commit that changed nothing (a statement no row matched, a Serializable read set:
    # no file, no row) and a compaction (no write id) are no operation's write
    stray = [h for h in metastore.history(TABLE) if h.txn_id > before_txn
             and h.write_id is not None and h.txn_id not in ours
             and (h.files or h.rows_inserted or h.rows_updated or h.rows_deleted)]
    assert stray == [], f"committed writes no operation logged as landing: {stray}"

    state = dict(initial)
    for _, e, write_id in sorted(committed, key=lambda c: c[0]):
        changed = apply(state, e.op, write_id)
        if e.end is not None and e.op["op"] in ("update", "delete", "merge"):
            assert changed == e.end["changed"], (
                f"{e.op} changed {e.end['changed']} rows; in commit order it changes "
                f"{changed} (a conflict was missed)")
        summary.committed += 1
    apps: dict[tuple[str, int], int] = {}
    for _, e, _ in committed:
        if "app" in e.op:
            key = (e.op["app"], e.op["version"])
            assert key not in apps, f"{key} committed twice: txns {apps[key]} and {e.txn}"
            apps[key] = e.txn or 0
    actual = read_model(wh.table(TABLE))
    assert_same(actual, state)
    return summary


def race(place: Place, workers: int, ops: int, seed: int, logs: Path,
         deadline_seconds: float = 240) -> tuple[Summary, dict[int, Row]]:
    """The whole chaos run: a new table, ``workers`` spawned processes of ``ops`` operations
    (worker ``w`` seeded ``seed + w``, logging under ``logs``), the check, then a major
    compaction and a cleaner pass that must change no row and leave nothing unread. Returns
    what happened and the final rows."""
    from process_support import run_spawned

    wh = connect(place)
    try:
        create_table(wh)
        initial = read_model(wh.table(TABLE))
        setup = max(txn.txn_id for txn in wh.metastore.show_transactions())
        paths = [logs / f"worker-{w}.jsonl" for w in range(workers)]
        run_spawned(spawned_worker, [(place, w, seed + w, ops, str(paths[w]))
                                     for w in range(workers)], deadline_seconds=deadline_seconds)
        entries, reads = load(paths)
        planned = [e for e in entries if "tries" not in e.op]
        assert len(planned) == workers * ops, "a worker did not log every operation"
        summary = check(wh, entries, reads, initial, before_txn=setup)
        final = read_model(wh.table(TABLE))
        compact(wh.table(TABLE), "major")
        Cleaner(wh, retention_seconds=0).run()
        assert read_model(wh.table(TABLE)) == final, "compacting and cleaning changed rows"
        assert orphans(wh.table(TABLE)) == [], "the cleaner left directories unread"
        assert "open" not in {txn.state for txn in wh.metastore.show_transactions()}
    finally:
        wh.close()
    return summary, final


def assert_same(actual: dict[int, Row], expected: dict[int, Row]) -> None:
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    changed = {i: (expected[i], actual[i]) for i in set(actual) & set(expected)
               if actual[i] != expected[i]}
    assert (missing, extra, changed) == ([], [], {}), (
        f"lost ids {missing}, unexpected ids {extra}, "
        f"differing (expected, read) as (k, counter, dt, writeid): {changed}")


# --- directories --------------------------------------------------------------------------------


def orphans(t: Table) -> list[str]:
    """Everything under the table's location that its current snapshot does not need: ACID
    directories it does not read, and anything else that is no partition on the way to one
    it reads (hidden files of the ACID directories themselves are not looked at)."""
    metastore = handle_of(t).core.metastore
    txns = metastore.valid_txns()
    write_ids = metastore.valid_write_ids(t.name, txns)
    out: list[str] = []
    root = Path(t.location)

    def walk(directory: Path, depth: int) -> bool:
        """True when ``directory`` (a partition level) leads to something read."""
        needed = False
        if depth == len(handle_of(t).info.partition_schema.names):
            state = acid_state(str(directory), write_ids, txns)
            read = {*state.deltas, *([state.base] if state.base else [])}
            for child in sorted(directory.iterdir()):
                if child.name in read:
                    needed = True
                else:
                    out.append(str(child.relative_to(root)))
        else:
            for child in sorted(directory.iterdir()):
                if child.is_dir() and "=" in child.name:
                    needed = walk(child, depth + 1) or needed
                else:
                    out.append(str(child.relative_to(root)))
        if not needed and directory != root:
            out.append(str(directory.relative_to(root)) + "/")
        return needed

    if root.exists():
        walk(root, 0)
    return sorted(out)


