"""Rows of W12: one-row UPDATE, DELETE and INSERT latency on a 1,000-row table.

Each task run reports every operation's median and p99 (``benchmarks.tasks_small``); a row
shows one operation's median in the seconds columns (the median over the task runs of each
run's median), with the p99, the median of the last ten operations (how latency grows as
deltas pile up) and the retries in its text (each the median over the runs). acidstore's runs
and delta-rs's are taken together, round by round, so the ratio is the median of the rounds'.
Each operation also gets a row of its median CPU time (the writer process's, every thread:
what the operation costs whatever else the host runs), beside delta-rs's. Target: median at
most 20 ms in one process, and no slower than delta-rs, in wall time and in CPU time.
"""

from __future__ import annotations

from benchmarks.harness import Bench, Measurement
from benchmarks.report import Row
from benchmarks.tasks_small import OPS


def _op(run: Measurement, op: str, figure: str = "median_ms") -> Measurement:
    """One operation's figures of a task's runs, as a measurement of its median latency (or
    of its median CPU time, ``figure="cpu_median_ms"``): each run's median is a sample (so
    rounds still pair up with the peer's)."""
    extra = {k.removeprefix(f"{op}_"): v for k, v in run.extra.items() if k.startswith(op)}
    samples = [float(e[f"{op}_{figure}"]) / 1e3 for e in run.sample_extras]
    return Measurement(float(extra[figure]) / 1e3, 1, run.peak_rss_mb, extra, samples,
                       run.group)


def _tail(m: Measurement) -> str:
    return (f"CPU {m.extra['cpu_median_ms']:.1f} ms, p99 {m.extra['p99_ms']:.0f} ms, last 10 "
            f"{m.extra['last10_median_ms']:.0f} ms, {m.extra['retries']:.0f} retries")


#: glibc's heap-trim threshold (64 MiB) for the rows run with it: without it, each small
#: file's writer frees its buffers, glibc hands the heap top back to the kernel and the next
#: file faults it in again (docs/configuration.md, "Many small transactions")
TRIM = {"MALLOC_TRIM_THRESHOLD_": str(64 << 20)}


def w12(m: Bench, ops: int = 40) -> list[Row]:
    rows: list[Row] = []
    for procs in (1, 8):
        args = {"procs": procs, "ops": ops}
        delta, alone, scheduled = m.together(
            ("small_txn", {"engine": "delta", **args}), ("small_txn", {"engine": "acid", **args}),
            ("small_txn", {"engine": "acid", **args, "compaction": True}))
        runs = {False: alone, True: scheduled}
        target = "<= 20 ms, <= 1.0x" if procs == 1 else "<= 1.0x"
        for op in OPS:
            peer = _op(delta, op)
            for compacting, run in runs.items():
                ours = _op(run, op)
                how = "scheduled compaction running" if compacting else "no compaction"
                note = (f"{run.extra['compactions']:.0f} compactions in "
                        f"{run.extra['scheduler_passes']:.0f} passes" if compacting else "")
                rows.append(Row(
                    "W12", f"one-row {op.upper()}, {ops} ops, {procs} proc, {how} "
                    f"({_tail(ours)}{'; ' + note if note else ''})", ours,
                    f"delta-rs ({_tail(peer)})", peer, target))
            rows.append(Row(
                "W12", f"one-row {op.upper()}, {ops} ops, {procs} proc, no compaction: CPU "
                "time per operation (the writer process's, every thread)",
                _op(alone, op, "cpu_median_ms"), "delta-rs CPU time per operation",
                _op(delta, op, "cpu_median_ms"), target))
    delta, ours_run = m.together(
        ("small_txn", {"engine": "delta", "procs": 1, "ops": ops, "env": TRIM}),
        ("small_txn", {"engine": "acid", "procs": 1, "ops": ops, "env": TRIM}))
    for op in OPS:
        ours, peer = _op(ours_run, op), _op(delta, op)
        rows.append(Row("W12", f"one-row {op.upper()}, {ops} ops, 1 proc, no compaction, both "
                        f"with MALLOC_TRIM_THRESHOLD_=64 MiB ({_tail(ours)})", ours,
                        f"delta-rs, the same setting ({_tail(peer)})", peer,
                        "<= 20 ms, <= 1.0x"))
    return rows


def w12_pile_up(m: Bench, ops: int = 200, every: int = 20) -> list[Row]:
    """``ops`` one-row UPDATEs in one process: the last 20's median latency, without and with
    a scheduled-compaction pass every ``every`` UPDATEs, beside delta-rs's."""
    peer, *runs = m.together(("pile_up", {"engine": "delta", "ops": ops}),
                             *(("pile_up", {"engine": "acid", "ops": ops, "every": each})
                               for each in (0, every)))
    rows = []
    for each, ours in zip((0, every), runs, strict=True):
        how = f"a compaction pass every {each}" if each else "no compaction"
        rows.append(Row(
            "W12", f"{ops} one-row UPDATEs, 1 proc, {how}: last 20 (first 20 "
            f"{ours.extra['first20_median_ms']:.0f} ms; {ours.extra['left']} directories left)",
            ours, f"delta-rs last 20 (first 20 {peer.extra['first20_median_ms']:.0f} ms; "
            f"{peer.extra['left']} log entries)", peer, "flat"))
    return rows
