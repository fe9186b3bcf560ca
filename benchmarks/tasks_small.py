"""W12: the latency of small transactions (a one-row UPDATE, DELETE and INSERT) on a
1,000-row table, acidstore beside delta-rs, in one process or in several at once.

Each run builds its own table (the 1,000 generated rows; acidstore bucketed by ``id`` into
ten buckets, as W1's table) and runs three phases on it, all writers in step (a barrier
between phases): ``ops`` one-row UPDATEs (``v1 = v1 + 1 WHERE id = x``), then ``ops`` one-row
DELETEs, then ``ops`` one-row INSERTs, the operations of a phase shared out among ``procs``
writer processes, each on rows of its own. Nothing compacts the table between operations,
so deltas pile up (40 UPDATEs leave 80 deltas); with ``compaction`` a scheduler process runs
acidstore's scheduled compaction (initiator, worker, cleaner: ``compaction.scheduler.run_once``,
Hive's thresholds) in a loop beside the writers, as ``acidstore compact --every`` would.

An operation's latency is from the call to its commit, retries included: a writer that loses a
commit race (acidstore ``CommitFailedError``, delta-rs ``CommitFailedError``) reloads and
tries again, and the retries are counted.
"""

from __future__ import annotations

import multiprocessing
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

OPS = ("update", "delete", "insert")
ROWS = 1000
INSERT_BASE = 1_000_000  # ids of inserted rows (above every existing one)


def _ids(op: str, worker: int, procs: int, count: int) -> list[int]:
    """The ids one writer touches in a phase: disjoint between writers (rows of their own),
    UPDATEs on even ids and DELETEs on odd ones, so no DELETE meets an updated row."""
    if op == "insert":
        return [INSERT_BASE + worker + procs * i for i in range(count)]
    start = 0 if op == "update" else 1
    return [(start + 2 * (worker + procs * i)) % ROWS for i in range(count)]


def _acid_ops(root: Path) -> tuple[Callable[[str, int], None], type[BaseException],
                                   Callable[[], None]]:
    import acidstore
    from acidstore.errors import CommitFailedError
    from benchmarks import data
    from benchmarks.tasks_write import TABLE

    wh = acidstore.connect(root)
    table = wh.table(TABLE)

    def run(op: str, key: int) -> None:
        if op == "update":
            table.update(f"id = {key}", {"v1": "v1 + 1"})
        elif op == "delete":
            table.delete(f"id = {key}")
        else:
            table.insert(data.generate(1, seed=key).set_column(
                0, "id", pa.array([key], pa.int64())))

    return run, CommitFailedError, lambda: None


def _delta_ops(root: Path) -> tuple[Callable[[str, int], None], type[BaseException],
                                    Callable[[], None]]:
    from deltalake import DeltaTable, write_deltalake
    from deltalake.exceptions import CommitFailedError

    from benchmarks import data
    from benchmarks.tasks_write import delta_writer

    table = DeltaTable(root)

    def run(op: str, key: int) -> None:
        if op == "update":
            table.update(updates={"v1": "v1 + 1"}, predicate=f"id = {key}",
                         writer_properties=delta_writer())
        elif op == "delete":
            table.delete(f"id = {key}", writer_properties=delta_writer())
        else:
            write_deltalake(table, data.generate(1, seed=key).set_column(
                0, "id", pa.array([key], pa.int64())), mode="append",
                writer_properties=delta_writer())

    return run, CommitFailedError, table.update_incremental


def writer(engine: str, root: str, worker: int, procs: int, counts: dict[str, int],
           barrier: Any, out: Any) -> None:
    """One writer process: its share of each phase, timed per operation, in wall time and
    in the CPU time of the whole process (every thread: delta-rs works on a Tokio runtime's
    threads, acidstore on its executor's), which a host's other load inflates far less."""
    run, conflict, reload = (_acid_ops if engine == "acid" else _delta_ops)(Path(root))
    latencies: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    retries = dict.fromkeys(OPS, 0)
    for op in OPS:
        barrier.wait()
        latencies[op], cpu[op] = [], []
        for key in _ids(op, worker, procs, counts[op]):
            start, start_cpu = time.perf_counter(), time.process_time()
            while True:
                try:
                    run(op, key)
                    break
                except conflict:
                    retries[op] += 1
                    reload()
            latencies[op].append(time.perf_counter() - start)
            cpu[op].append(time.process_time() - start_cpu)
    out.put((worker, latencies, retries, cpu))


def scheduler(root: str, stop: Any, out: Any) -> None:
    """Scheduled compaction beside the writers: one pass, then the next as soon as it ends
    (a short ``--every``); compacted directories are cleaned at once (retention 0)."""
    import acidstore
    from compaction.scheduler import run_once

    wh = acidstore.connect(root)
    passes = compactions = 0
    while True:  # at least one pass, however soon the writers finish (a slow start-up)
        summary = run_once(wh, retention_seconds=0)
        passes += 1
        compactions += len(summary.ran)
        if stop.wait(0.2):
            break
    out.put(("scheduler", passes, compactions))


def _create(engine: str, root: Path) -> None:
    from benchmarks import data

    rows = data.generate(ROWS)
    if engine == "acid":
        import acidstore
        from benchmarks.tasks_write import acid_create

        with acidstore.connect(root) as wh:
            acid_create(wh).insert(rows)
    else:
        from deltalake import write_deltalake

        from benchmarks.tasks_write import delta_writer

        write_deltalake(root, rows, writer_properties=delta_writer())


def _share(total: int, procs: int, worker: int) -> int:
    return total // procs + (1 if worker < total % procs else 0)


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(np.ceil(0.99 * len(ordered))) - 1)]
    tail = ordered if len(values) < 20 else sorted(values[-10:])
    return {"median_ms": statistics.median(ordered) * 1e3, "p99_ms": p99 * 1e3,
            "last10_median_ms": statistics.median(tail) * 1e3}


def small_txn(args: dict[str, Any]) -> dict[str, Any]:
    """W12 (``engine`` acid or delta, ``procs`` writers, ``ops`` per phase, ``compaction``):
    each operation's latency (median, p99, the last ten's median), its CPU time's median
    (``<op>_cpu_median_ms``) and its retries."""
    engine, procs, ops = args["engine"], int(args["procs"]), int(args.get("ops", 40))
    with_compaction = bool(args.get("compaction")) and engine == "acid"
    scratch = Path(args["scratch"])
    scratch.mkdir(parents=True, exist_ok=True)
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="w12-", dir=scratch) as tmp:
        root = Path(tmp) / "t"
        _create(engine, root)
        barrier, out, stop = ctx.Barrier(procs), ctx.Queue(), ctx.Event()
        children = [ctx.Process(target=writer, args=(
            engine, str(root), w, procs, {op: _share(ops, procs, w) for op in OPS}, barrier,
            out)) for w in range(procs)]
        compactor = ctx.Process(target=scheduler, args=(str(root), stop, out)) \
            if with_compaction else None
        if compactor is not None:
            compactor.start()
        for child in children:
            child.start()
        results = [out.get() for _ in children]
        stop.set()
        scheduled = out.get() if compactor is not None else None
        for process in [*children, *([compactor] if compactor is not None else [])]:
            process.join()
            if process.exitcode != 0:
                raise RuntimeError(f"a W12 process failed with exit code {process.exitcode}")
        state = _final_rows(engine, root)
    latencies: dict[str, list[float]] = {op: [] for op in OPS}
    cpu: dict[str, list[float]] = {op: [] for op in OPS}
    retries = dict.fromkeys(OPS, 0)
    for _, lat, ret, used in sorted(results, key=lambda r: r[0]):
        for op in OPS:
            latencies[op] += lat[op]
            cpu[op] += used[op]
            retries[op] += ret[op]
    expected = ROWS - ops + ops
    if state != expected:
        raise RuntimeError(f"W12 {engine}: the table holds {state} rows, not {expected}")
    figures: dict[str, Any] = {f"{op}_{k}": v for op in OPS
                               for k, v in _summary(latencies[op]).items()}
    figures.update({f"{op}_retries": retries[op] for op in OPS})
    figures.update({f"{op}_cpu_median_ms": statistics.median(cpu[op]) * 1e3 for op in OPS})
    if scheduled is not None:
        figures.update({"scheduler_passes": scheduled[1], "compactions": scheduled[2]})
    return {"seconds": figures["update_median_ms"] / 1e3, "rows": 3 * ops, **figures}


def _final_rows(engine: str, root: Path) -> int:
    if engine == "acid":
        import acidstore
        from benchmarks.tasks_write import TABLE

        with acidstore.connect(root) as wh:
            return int(wh.table(TABLE).to_arrow(columns=["id"]).num_rows)
    from deltalake import DeltaTable

    return int(DeltaTable(root).to_pyarrow_table(columns=["id"]).num_rows)


SMALL_TASKS = {"small_txn": small_txn}


def pile_up(args: dict[str, Any]) -> dict[str, Any]:
    """W12's pile-up: ``ops`` one-row UPDATEs in one process on a fresh 1,000-row table, with
    a scheduled-compaction pass (``compaction.scheduler.run_once``, retention 0) after every
    ``every`` UPDATEs (0: never; acidstore only; the pass is not in any UPDATE's latency).
    Reports the median latency of the first and of the last 20 UPDATEs, and the table's
    directories (acidstore) or log entries (delta-rs) left at the end."""
    engine, ops, every = args["engine"], int(args.get("ops", 200)), int(args.get("every", 0))
    scratch = Path(args["scratch"])
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="w12-", dir=scratch) as tmp:
        root = Path(tmp) / "t"
        _create(engine, root)
        run, _, _ = (_acid_ops if engine == "acid" else _delta_ops)(root)
        compact: Callable[[], object] | None = None
        if engine == "acid" and every:
            import acidstore
            from compaction.scheduler import run_once

            wh = acidstore.connect(root)

            def compact() -> object:
                return run_once(wh, retention_seconds=0)
        latencies = []
        for i, key in enumerate(_ids("update", 0, 1, ops)):
            if compact is not None and i and i % every == 0:
                compact()
            start = time.perf_counter()
            run("update", key)
            latencies.append(time.perf_counter() - start)
        left = _directories(root) if engine == "acid" else \
            sum(1 for _ in (root / "_delta_log").glob("*.json"))
    first = statistics.median(latencies[:20]) * 1e3
    last = statistics.median(latencies[-20:]) * 1e3
    return {"seconds": last / 1e3, "rows": ops, "first20_median_ms": first,
            "last20_median_ms": last, "left": left}


def _directories(root: Path) -> int:
    """The ACID directories in the W12 table of the warehouse at ``root``."""
    import acidstore
    from benchmarks.tasks_write import TABLE

    with acidstore.connect(root) as wh:
        location = Path(wh.table(TABLE).location)
    return sum(1 for p in location.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


SMALL_TASKS["pile_up"] = pile_up
