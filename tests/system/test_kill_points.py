"""Processes killed at 83 named points of writes, commits, compactions and cleaner passes, and
at random moments of random DML (issue 12).

Each kill runs in a child process of its own on a copy of a prepared warehouse (SQLite): at a
named point (``kill_workers``) the child ends with ``os._exit``; a random-kill child runs the
chaos workload and gets SIGKILL after a seeded random delay. All children run first, two at a
time, and then the dead transactions' timeout passes once for all of them. After each kill:

- the table reads exactly the pre-state or exactly the post-state of the interrupted operation
  (the post-state exactly when the metastore says its transaction committed; for compaction
  and cleaning both are the same rows with the same ROW__IDs); a random kill's table is its
  logged operations replayed in commit order (``chaos_support.check``);
- a following write succeeds (an idempotent insert is skipped exactly when it had landed);
- once the dead transaction has timed out, the cleaner *alone* leaves no directory the
  committed state does not read (``chaos_support.orphans``); a worker then settles the queue,
  and nothing is left open, queued or unread.
"""

from __future__ import annotations

import multiprocessing
import random
import shutil
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from chaos_support import (
    DML,
    TABLE,
    Row,
    apply,
    chaos_worker,
    check,
    create_table,
    load,
    orphans,
    read_model,
    rows_table,
)
from compaction_support import aborted_write, compactions
from kill_workers import DIED, OPERATIONS, POINTS, die_at

import acidstore
from acidstore import Table, Warehouse
from compaction import Cleaner, Worker, compact

TIMEOUT = 0.5  # the dead transactions' timeout (every process here uses it)
PARALLEL = 2
RANDOM_SEEDS = list(range(8))
#: ids of the write that follows each kill
NEXT_ID = 9_000_000
CONTEXT = multiprocessing.get_context("forkserver")
Exact = list[tuple[Any, ...]]


@dataclass
class Template:
    """A prepared warehouse (closed) and what it reads."""

    root: Path
    model: dict[int, Row]
    exact: Exact
    last_txn: int


@dataclass
class Killed:
    """One child's warehouse copy, log and exit code (-9: SIGKILL; None: it hung)."""

    root: Path
    log: Path
    template: Template
    exitcode: int | None = None


def exact(t: Table) -> Exact:
    """Every row with its full ROW__ID (compaction and cleaning must keep them all)."""
    got = t.to_arrow(with_row_id=True).to_pylist()
    return sorted((r["id"], r["k"], r["counter"], r["dt"], r["row__id"]["writeid"],
                   r["row__id"]["bucketid"], r["row__id"]["rowid"]) for r in got)


def _template(root: Path, shape: str) -> Template:
    """``plain``: two partitions, several deltas and a delete delta; ``queued``: plus a major
    compaction queued per partition; ``cleanable``: plus an aborted write's files and a
    committed major compaction whose replaced directories wait for the cleaner."""
    wh = acidstore.connect(root, txn_timeout=TIMEOUT)
    t = create_table(wh)
    t.insert(rows_table([(i, i % 4, "ab"[i % 2]) for i in range(12, 20)]))
    t.delete("dt = 'a' AND k = 0")
    t.insert(rows_table([(i, i % 4, "ab"[i % 2]) for i in range(20, 24)]))
    if shape == "queued":
        for part in ("dt=a", "dt=b"):
            assert wh.metastore.enqueue_compaction(TABLE, part, "major", "test")
    elif shape == "cleanable":
        aborted_write(wh, TABLE, rows_table([(100, 1, "a"), (101, 2, "b")]))
        compact(t, "major")
    template = Template(root, read_model(t), exact(t),
                        max(txn.txn_id for txn in wh.metastore.show_transactions()))
    wh.close()
    return template


def _shape(operation: str) -> str:
    return {"worker": "queued", "cleaner": "cleanable"}.get(operation, "plain")


def _began(log: Path) -> bool:
    """Whether a chaos child logged the begin of its first operation (before it, it only
    reads the table once)."""
    return log.exists() and '"begin"' in log.read_text(encoding="utf-8")


def _run_children(jobs: list[tuple[str, Killed, Any, tuple[Any, ...], float | None]]) -> None:
    """Run the children ``PARALLEL`` at a time; SIGKILL those with a delay once it passed,
    counted from their first logged operation (on a loaded machine a child can take longer
    than the delay just to start, and a kill before any operation tests nothing)."""
    pending = list(jobs)
    running: list[tuple[Killed, Any, float | None, float]] = []
    first: dict[Path, float] = {}  # a child's log -> when it logged its first operation
    while pending or running:
        while pending and len(running) < PARALLEL:
            _, killed, target, args, delay = pending.pop(0)
            process = CONTEXT.Process(target=target, args=args)
            process.start()
            running.append((killed, process, delay, time.monotonic()))
        time.sleep(0.02)
        for item in list(running):
            killed, process, delay, started = item
            now = time.monotonic()
            hung = now - started > 60
            if delay is not None and killed.log not in first and _began(killed.log):
                first[killed.log] = now
            due = delay is not None and killed.log in first and \
                now - first[killed.log] >= delay
            if process.is_alive() and (hung or due):
                process.kill()  # SIGKILL; a child that just exited is no error
            if not process.is_alive():
                process.join()
                killed.exitcode = None if hung and delay is None else process.exitcode
                running.remove(item)


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Killed]]:
    CONTEXT.set_forkserver_preload(["acidstore", "compaction", "chaos_support",
                                    "kill_workers"])
    base = tmp_path_factory.mktemp("kills")
    templates = {shape: _template(base / f"template-{shape}", shape)
                 for shape in ("plain", "queued", "cleanable")}
    rng = random.Random(12)
    jobs: list[tuple[str, Killed, Any, tuple[Any, ...], float | None]] = []
    for number, name in enumerate([*POINTS, *(f"random {s}" for s in RANDOM_SEEDS)]):
        shape = "plain" if name.startswith("random") else _shape(POINTS[name].operation)
        job = Killed(base / f"kill-{number}", base / f"kill-{number}.jsonl", templates[shape])
        shutil.copytree(job.template.root, job.root)
        if name.startswith("random"):
            seed = int(name.split()[1])
            jobs.append((name, job, chaos_worker,
                         (str(job.root), 60 + seed, seed, 500, str(job.log), TIMEOUT),
                         rng.uniform(0.3, 2.5)))
        else:
            jobs.append((name, job, die_at, (str(job.root), name, str(job.log), TIMEOUT), None))
    _run_children(jobs)
    time.sleep(TIMEOUT + 0.1)  # every dead transaction is past its timeout now
    yield {name: job for name, job, *_ in jobs}


def _settle(wh: Warehouse) -> None:
    """Let the metastore abort the dead transactions (any call taking a snapshot does)."""
    deadline = time.monotonic() + 30
    while "open" in {txn.state for txn in wh.metastore.show_transactions()}:
        assert time.monotonic() < deadline, "a dead transaction never timed out"
        wh.table(TABLE).snapshot()
        time.sleep(0.05)


def _after_kill(wh: Warehouse, expected: dict[int, Row], *, landed: bool | None = None
                ) -> None:
    """A following write works; the cleaner alone leaves nothing unread; a worker then
    settles the queue. ``landed``: the kill interrupted the idempotent insert, retried
    here (skipped exactly when it had committed)."""
    t = wh.table(TABLE)
    if landed is not None:
        op = OPERATIONS["idempotent insert"]
        retry = t.insert(rows_table(op["rows"]), app_id=op["app"], version=op["version"])
        assert retry.skipped == landed
        if not landed:
            apply(expected, op, retry.write_id)
    follow = {"op": "insert", "rows": [[NEXT_ID, 1, "b"], [NEXT_ID + 1, 2, "a"]]}
    apply(expected, follow, wh.table(TABLE).insert(rows_table(follow["rows"])).write_id)
    assert read_model(t) == expected
    Cleaner(wh, retention_seconds=0).run()
    assert orphans(t) == [], "the cleaner alone left directories behind"
    assert read_model(t) == expected
    time.sleep(0.05)
    Worker(wh, stale_seconds=0.01).run()  # takes over a dead worker's or compact()'s entry
    Cleaner(wh, retention_seconds=0).run()
    assert [c["state"] for c in compactions(wh)
            if c["state"] not in ("succeeded", "refused", "ready for cleaning")] == []
    assert orphans(t) == []
    assert read_model(t) == expected
    assert "open" not in {txn.state for txn in wh.metastore.show_transactions()}


@pytest.mark.parametrize("name", POINTS)
def test_a_process_killed_at_a_named_point(killed: dict[str, Killed], name: str) -> None:
    job, point = killed[name], POINTS[name]
    assert job.exitcode == DIED, f"the process did not die at {name!r} ({job.exitcode})"
    op = OPERATIONS[point.operation]
    with acidstore.connect(job.root, txn_timeout=TIMEOUT) as wh:
        _settle(wh)
        t = wh.table(TABLE)
        pre = job.template.model
        if op["op"] not in DML:  # the same rows, with the same ROW__IDs
            assert exact(t) == job.template.exact
            _after_kill(wh, dict(pre))
            return
        entries, _ = load([job.log])
        (entry,) = entries
        assert entry.end is None and entry.txn is not None
        info = wh.metastore.commit_info(entry.txn)
        assert (info is not None) == point.lands
        post = dict(pre)
        apply(post, op, info.write_ids[TABLE] if info else entry.txn)
        assert read_model(t) == (post if info else pre)
        _after_kill(wh, dict(post if info else pre),
                    landed=(info is not None) if "app" in op else None)


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_a_process_killed_at_a_random_moment(killed: dict[str, Killed], seed: int) -> None:
    job = killed[f"random {seed}"]
    assert job.exitcode == -signal.SIGKILL, "the process ended before it was killed"
    with acidstore.connect(job.root, txn_timeout=TIMEOUT) as wh:
        _settle(wh)
        entries, reads = load([job.log])
        assert entries, "killed before its first operation"
        check(wh, entries, reads, job.template.model, before_txn=job.template.last_txn)
        _after_kill(wh, read_model(wh.table(TABLE)))
