"""M1: metastore transactions opened and committed per second, 1 and 8 writer processes.

    python -m benchmarks.metastore                      # SQLite + a throwaway PostgreSQL
    python -m benchmarks.metastore --postgresql URL     # an existing server instead
    python -m benchmarks.metastore --cpu                # CPU per cycle, client and server

Each writer is a process of its own with its own metastore handle (as separate programs are)
and its own table (docs/benchmarks.md: 8 writers on different tables). A cycle is a writer's whole
metastore traffic for one insert, measured two ways side by side, the writers switching
between them every half second throughout one run:
- ``4 calls``: open a txn, allocate a write id, record the component, commit (four durable
  metastore transactions: what an insert cost before ``open_transaction(writes=...)``, and
  still what a write inside an explicit transaction costs);
- ``2 calls``: open with the planned write (allocation and record in the open's metastore
  transaction), commit: what ``Table.insert`` outside an explicit transaction does now.
After the run every table's history must hold exactly the write ids 1..n its writer committed
(zero lost or duplicated). The throwaway PostgreSQL server keeps the default durability (fsync
and synchronous commit on); SQLite runs with the library's settings (WAL, synchronous FULL).

``--cpu`` measures what one ``2 calls`` cycle costs in CPU, in the writer process and in the
throwaway server's processes (from /proc): with every writer and the server on one machine,
``cores / (client + server CPU)`` bounds the commits per second any number of writers reach.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from acidstore.metastore import (
    Metastore,
    NewTable,
    PlannedWrite,
    PostgresMetastore,
    SqliteMetastore,
    WriteComponent,
)

Spec = tuple[str, str]  # ("sqlite", path) | ("postgresql", url)
Cycle = Literal["4 calls", "2 calls"]
CYCLES: tuple[Cycle, ...] = ("4 calls", "2 calls")


def _open(spec: Spec) -> Metastore:
    kind, target = spec
    return SqliteMetastore(target) if kind == "sqlite" else PostgresMetastore(target)


def _writer(spec: Spec, worker: int, seconds: float, slot: float, barrier: Any,
            out: Any) -> None:
    """Commit cycles for ``seconds``, switching between the two kinds every ``slot`` seconds
    (all writers in step, from the barrier on): a disk whose fsync time drifts, as a shared
    machine's does, then slows both kinds alike instead of whichever ran at the time."""
    store = _open(spec)
    table = f"default.m1_{worker}"
    store.create_table(NewTable("default", f"m1_{worker}", pa.schema([("id", pa.int64())]),
                                pa.schema([]), (), 0, {}, f"/m1/{worker}"))
    planned = [PlannedWrite(table, ("",), "insert")]
    spent = dict.fromkeys(CYCLES, 0.0)
    commits = dict.fromkeys(CYCLES, 0)
    done: list[int] = []
    barrier.wait(timeout=120)
    start = time.perf_counter()
    while (began := time.perf_counter()) - start < seconds:
        cycle = CYCLES[int((began - start) / slot) % len(CYCLES)]
        if cycle == "2 calls":
            opened = store.open_transaction(user="m1", host="bench", writes=planned)
            txn, write_id = opened.txn_id, opened.write_ids[table]
        else:
            txn = store.open_transaction(user="m1", host="bench").txn_id
            write_id = store.allocate_write_id(txn, table)
        component = WriteComponent(table, "", "insert", write_id,
                                   (f"delta_{write_id:07d}_{write_id:07d}_0000",),
                                   rows_inserted=1, files=1, bytes=100)
        if cycle == "4 calls":
            store.record_write(txn, component)
        store.commit(txn, [component])
        done.append(write_id)
        spent[cycle] += time.perf_counter() - began
        commits[cycle] += 1
    out.put((worker, spent, commits, done))
    store.close()


def run(spec: Spec, writers: int, seconds: float, slot: float = 0.5) -> dict[Cycle, float]:
    """Commits per second of ``writers`` processes together, per cycle (each cycle's commits
    over the mean time a writer spent in it); checks the write ids."""
    context = multiprocessing.get_context("spawn")
    barrier, out = context.Barrier(writers), context.Queue()
    procs = [context.Process(target=_writer, args=(spec, w, seconds, slot, barrier, out))
             for w in range(writers)]
    for proc in procs:
        proc.start()
    reports = [out.get(timeout=seconds + 180) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    store = _open(spec)
    try:
        for worker, _, _, done in reports:
            history = [e.write_id for e in store.history(f"m1_{worker}")]
            if not done or done != list(range(1, len(done) + 1)) or history != done:
                raise AssertionError(f"writer {worker}: write ids lost or duplicated")
    finally:
        store.close()
    rates: dict[Cycle, float] = {}
    for cycle in CYCLES:
        time_in = sum(spent[cycle] for _, spent, _, _ in reports) / writers
        total = sum(commits[cycle] for _, _, commits, _ in reports)
        rates[cycle] = total / time_in if time_in else 0.0
    return rates


def measure_all(postgresql: str | None, seconds: float, writers: tuple[int, ...] = (1, 8)
                ) -> dict[tuple[str, int, Cycle], float]:
    """``{(backend, writers, cycle): commits/s}``, each run on a fresh store."""
    server = None
    if postgresql is None:
        from benchmarks.postgres_server import start

        server = start(durable=True)
    results: dict[tuple[str, int, Cycle], float] = {}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for n in writers:
                path = Path(scratch) / f"m1-{n}.db"
                for cycle, rate in run(("sqlite", str(path)), n, seconds).items():
                    results[("sqlite", n, cycle)] = rate
                url = postgresql or server.new_store()  # type: ignore[union-attr]
                for cycle, rate in run(("postgresql", url), n, seconds).items():
                    results[("postgresql", n, cycle)] = rate
    finally:
        if server is not None:
            server.stop()
    return results


def insert_cycle(store: Metastore, table: str) -> None:
    """One plain insert's metastore traffic, the ``2 calls`` cycle: an open with its planned
    write, then the commit (what ``Table.insert`` outside a transaction does)."""
    opened = store.open_transaction(user="m1", host="bench",
                                    writes=[PlannedWrite(table, ("",), "insert")])
    write_id = opened.write_ids[table]
    store.commit(opened.txn_id, [WriteComponent(
        table, "", "insert", write_id, (f"delta_{write_id:07d}_{write_id:07d}_0000",),
        rows_inserted=1, files=1, bytes=100)])


def _server_cpu(postmaster: int) -> float:
    """CPU seconds so far of the server's postmaster and its children (backends, WAL
    writer, checkpointer), from /proc."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # the process ended while we looked
        fields = text[text.rindex(")") + 2:].split()
        if int(stat.parent.name) == postmaster or int(fields[1]) == postmaster:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def cpu_per_cycle(cycles: int = 2000) -> dict[str, tuple[float, float]]:
    """``{backend: (client ms, server ms)}`` of CPU per ``2 calls`` cycle, one writer."""
    from benchmarks.postgres_server import start

    server = start(durable=True)
    pid_file = next(server.root.glob("**/postmaster.pid"))
    postmaster = int(pid_file.read_text().split()[0])
    out: dict[str, tuple[float, float]] = {}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for backend, spec in (("sqlite", ("sqlite", str(Path(scratch) / "m1.db"))),
                                  ("postgresql", ("postgresql", server.new_store()))):
                store = _open(spec)
                store.create_table(NewTable("default", "m1", pa.schema([("id", pa.int64())]),
                                            pa.schema([]), (), 0, {}, "/m1"))
                for _ in range(50):  # warm: connections, plans, caches
                    insert_cycle(store, "default.m1")
                client, started = time.process_time(), _server_cpu(postmaster)
                for _ in range(cycles):
                    insert_cycle(store, "default.m1")
                client = time.process_time() - client
                served = _server_cpu(postmaster) - started if backend == "postgresql" else 0.0
                out[backend] = (client * 1000 / cycles, served * 1000 / cycles)
                store.close()
    finally:
        server.stop()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgresql", default=None, help="URL of an existing server")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--cpu", action="store_true",
                        help="CPU per cycle of the writer and the server instead")
    args = parser.parse_args(argv)
    if args.cpu:
        cores = os.cpu_count() or 1
        print(f"M1 CPU per '2 calls' cycle, one writer, {cores} cores")
        print("| backend | client ms | server ms | bound on this machine (cycles/s) |")
        print("|---|---|---|---|")
        for backend, (client, served) in cpu_per_cycle().items():
            print(f"| {backend} | {client:.2f} | {served:.2f} | "
                  f"{cores * 1000 / (client + served):.0f} |")
        return
    results = measure_all(args.postgresql, args.seconds)
    print(f"M1 on {os.cpu_count()} cores, {args.seconds:.0f} s per run (the two cycles "
          "alternating every 0.5 s)")
    print("| backend | writers | 4 calls (commits/s) | 2 calls (commits/s) | ratio | target |")
    print("|---|---|---|---|---|---|")
    sqlite_one = results[("sqlite", 1, "2 calls")]
    for backend, n in dict.fromkeys((b, w) for b, w, _ in results):
        before, after = results[(backend, n, "4 calls")], results[(backend, n, "2 calls")]
        target = ">= 500" if (backend, n) == ("sqlite", 1) else \
            f">= {3 * sqlite_one:.0f} (3x SQLite 1 writer)" if (backend, n) == ("postgresql", 8) \
            else "-"
        print(f"| {backend} | {n} | {before:.0f} | {after:.0f} | {after / before:.2f}x | "
              f"{target} |")


if __name__ == "__main__":
    main()
