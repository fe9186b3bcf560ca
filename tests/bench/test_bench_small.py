"""Smoke test of benchmark W12 (``benchmarks.tasks_small``): a few one-row statements from two
writer processes, on both engines, acidstore with its scheduled compaction beside them; the
task itself fails if the table does not end with the rows the statements leave."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.harness import Bench, Measurement
from benchmarks.tasks_small import OPS, pile_up, small_txn
from benchmarks.workloads_small import TRIM, w12


@pytest.mark.parametrize("engine", ["acid", "delta"])
def test_w12_runs_two_writers(tmp_path: Path, engine: str) -> None:
    out = small_txn({"engine": engine, "procs": 2, "ops": 4, "scratch": str(tmp_path),
                     "compaction": engine == "acid"})
    assert out["rows"] == 12
    for op in OPS:
        assert 0 < out[f"{op}_median_ms"] <= out[f"{op}_p99_ms"]
        assert out[f"{op}_retries"] >= 0
        assert out[f"{op}_cpu_median_ms"] > 0
    if engine == "acid":
        assert out["scheduler_passes"] >= 1
    assert list(tmp_path.iterdir()) == []  # the run's table is removed


def test_w12_rows_show_each_operation_beside_delta_rs() -> None:
    envs: list[object] = []

    def fake(task: str, **args: object) -> Measurement:
        envs.append(args.get("env"))
        base = 0.01 if args["engine"] == "acid" else 0.02
        extra: dict[str, object] = {"compactions": 1, "scheduler_passes": 2}
        for i, op in enumerate(OPS):
            extra.update({f"{op}_median_ms": (base + i) * 1e3, f"{op}_p99_ms": 50.0,
                          f"{op}_last10_median_ms": 9.0, f"{op}_retries": 0,
                          f"{op}_cpu_median_ms": 7.0})
        return Measurement(base, 12, 100.0, extra)

    rows = w12(Bench(lambda specs: [fake(task, **args) for task, args in specs]), ops=4)
    # per process count and operation: wall time without and with compaction, and CPU time;
    # then one process with the heap-trim setting
    assert len(rows) == 2 * 3 * 3 + 3
    assert envs.count(TRIM) == 2  # acidstore's run and delta-rs's
    assert all("MALLOC_TRIM_THRESHOLD_" in r.what for r in rows[-3:])
    first = rows[0]
    assert "UPDATE" in first.what and first.ours.seconds == pytest.approx(0.01)
    assert first.peer is not None and first.peer.seconds == pytest.approx(0.02)
    cpu = [r for r in rows if "CPU time per operation" in r.what]
    assert len(cpu) == 2 * 3 and all(r.ours.seconds == pytest.approx(7e-3) for r in cpu)
    assert all("CPU 7.0 ms" in r.what for r in rows if r not in cpu)


@pytest.mark.parametrize(("engine", "every"), [("acid", 0), ("acid", 10), ("delta", 0)])
def test_w12_pile_up(tmp_path: Path, engine: str, every: int) -> None:
    out = pile_up({"engine": engine, "ops": 25, "every": every, "scratch": str(tmp_path)})
    assert out["rows"] == 25 and out["first20_median_ms"] > 0 and out["last20_median_ms"] > 0
    if engine == "acid":
        # 25 UPDATEs write 50 deltas beside the insert; compaction folds them
        assert out["left"] == 51 if not every else out["left"] < 51, out["left"]
