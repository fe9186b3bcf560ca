"""The benchmark harness: measurements taken together pair up round by round, so a load that
drifts through a run weighs on both sides of a ratio alike (``benchmarks.harness``)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.harness import Bench, Measurement, measure_together, median_extras
from benchmarks.report import Row
from benchmarks.workloads_small import w12


class DriftingHost:
    """Children whose time is their task's cost times a load that rises with every child
    run, as on a host that gets busier through a run."""

    def __init__(self, cost: dict[str, float]) -> None:
        self.cost = cost
        self.ran: list[str] = []

    def __call__(self, task: str, args: dict[str, Any]) -> tuple[dict[str, Any], float]:
        self.ran.append(task)
        load = float(len(self.ran))
        return {"seconds": self.cost[task] * load, "rows": 10, "label": task,
                "count": 7}, 100.0 + len(self.ran)


def test_rounds_alternate_and_ratios_pair_round_by_round() -> None:
    host = DriftingHost({"ours": 1.0, "peer": 2.0})
    ours, peer = measure_together([("ours", {}), ("peer", {})], repeat=4, warmup=1,
                                  run_one=host)
    assert host.ran == ["ours", "peer"] + ["ours", "peer", "peer", "ours"] * 2
    assert ours.group == peer.group is not None
    # the load at each of ours's children: 3, 6, 7, 10; at peer's: 4, 5, 8, 9
    assert ours.samples == [3.0, 6.0, 7.0, 10.0] and peer.samples == [8.0, 10.0, 16.0, 18.0]
    assert ours.peak_rss_mb == 110.0  # the largest of its timed children
    assert ours.extra == {"label": "ours", "count": 7}
    rounds = ours.paired_ratios(peer)
    assert rounds == pytest.approx([3 / 8, 6 / 10, 7 / 16, 10 / 18])
    row = Row("W0", "test", ours, "peer", peer, "-")
    assert row.ratio() == "0.50x (0.38-0.60)"  # the rounds' median, and their range


def test_a_busy_stretch_moves_one_round_not_the_ratio() -> None:
    """The host is three times slower for the 2nd to 4th children: medians taken apart say
    1 / 6, the rounds say 1 / 2 (the true ratio) in two rounds out of three."""
    ran: list[str] = []

    def busy(task: str, args: dict[str, Any]) -> tuple[dict[str, Any], float]:
        ran.append(task)
        load = 3.0 if 2 <= len(ran) <= 4 else 1.0
        return {"seconds": (1.0 if task == "ours" else 2.0) * load, "rows": 1}, 1.0

    ours, peer = measure_together([("ours", {}), ("peer", {})], repeat=3, warmup=0,
                                  run_one=busy)
    assert ours.seconds / peer.seconds == pytest.approx(1 / 6)
    assert Row("W0", "test", ours, "peer", peer, "-").ratio() == "0.50x (0.17-0.50)"


def test_measurements_taken_apart_compare_their_medians() -> None:
    ours = Measurement(1.0, 1, 1.0, samples=[1.0, 1.0], group=1)
    peer = Measurement(4.0, 1, 1.0, samples=[2.0, 6.0], group=2)
    assert ours.paired_ratios(peer) is None
    assert Row("W0", "test", ours, "peer", peer, "-").ratio() == "0.25x"
    single = measure_together([("ours", {}), ("peer", {})], repeat=1, warmup=0,
                              run_one=DriftingHost({"ours": 1.0, "peer": 4.0}))
    assert Row("W0", "test", single[0], "peer", single[1], "-").ratio() == "0.12x"


def test_extra_figures_are_the_childrens_median() -> None:
    merged = median_extras([{"n": 3, "same": 5, "name": "a", "flag": True},
                            {"n": 1, "same": 5, "name": "b", "flag": False},
                            {"n": 2, "same": 5, "name": "c", "flag": True}])
    assert merged == {"n": 2, "same": 5, "name": "c", "flag": True}
    assert isinstance(merged["same"], int)


def test_children_run_for_real() -> None:
    ours, peer = measure_together([("noop", {}), ("noop", {})], repeat=1, warmup=0)
    assert ours.group == peer.group
    assert ours.samples == [0.0] and ours.rows == 0 and ours.peak_rss_mb > 10


def test_w12_rows_pair_each_operations_median_run_by_run() -> None:
    """A W12 row's ratio is over the runs' medians of that operation, round by round, and its
    figure the median of those medians (not the last run's)."""
    host_runs: list[str] = []

    def run_one(task: str, args: dict[str, Any]) -> tuple[dict[str, Any], float]:
        host_runs.append(args["engine"])
        load = float(len(host_runs))
        base = 1.0 if args["engine"] == "acid" else 2.0
        extra: dict[str, Any] = {"compactions": 1, "scheduler_passes": 2}
        for op in ("update", "delete", "insert"):
            extra.update({f"{op}_median_ms": base * load, f"{op}_p99_ms": 50.0,
                          f"{op}_last10_median_ms": 9.0, f"{op}_retries": 0,
                          f"{op}_cpu_median_ms": 7.0})
        return {"seconds": 1.0, "rows": 12, **extra}, 100.0

    rows = w12(Bench(lambda specs: measure_together(specs, repeat=3, warmup=0,
                                                     run_one=run_one)), ops=4)
    first = rows[0]  # UPDATE, one process, no compaction: delta-rs ran 1st, 6th, 7th
    assert "UPDATE" in first.what and "1 proc, no compaction" in first.what
    assert first.peer is not None
    assert first.ours.samples == [2e-3, 5e-3, 8e-3] and first.ours.seconds == 5e-3
    assert first.peer.samples == [2e-3, 12e-3, 14e-3]
    assert first.ratio() == "0.57x (0.42-1.00)"
