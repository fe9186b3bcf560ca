"""Smoke test of benchmark M1 (``benchmarks.metastore``): two writer processes for a
second on each backend, alternating the two cycles; ``run`` itself fails if a write id was lost or
duplicated."""

from __future__ import annotations

from pathlib import Path

from benchmarks.metastore import CYCLES, cpu_per_cycle, run
from benchmarks.postgres_server import PostgresServer


def test_m1_runs_on_both_backends(tmp_path: Path, postgres_server: PostgresServer) -> None:
    for spec in [("sqlite", str(tmp_path / "m1.db")), ("postgresql", postgres_server.new_store())]:
        rates = run(spec, 2, 1.0, slot=0.25)
        assert set(rates) == set(CYCLES) and all(rate > 0 for rate in rates.values())


def test_m1_cpu_counts_the_writer_and_the_server() -> None:
    """``--cpu``: SQLite's cycle is all in the writer; PostgreSQL's server processes are
    found and counted (a cycle is two durable transactions: never free)."""
    costs = cpu_per_cycle(cycles=100)  # the kernel counts CPU in 10 ms ticks
    assert costs["sqlite"][0] > 0 and costs["sqlite"][1] == 0
    assert costs["postgresql"][0] > 0 and costs["postgresql"][1] > 0
