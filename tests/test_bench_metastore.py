"""Smoke test of benchmark M1 (``benchmarks.metastore``): two writer processes for half a
second on each backend, with each cycle; ``run`` itself fails if a write id was lost or
duplicated."""

from __future__ import annotations

from pathlib import Path

from benchmarks.metastore import CYCLES, run
from benchmarks.postgres_server import PostgresServer


def test_m1_runs_on_both_backends(tmp_path: Path, postgres_server: PostgresServer) -> None:
    for cycle in CYCLES:
        assert run(("sqlite", str(tmp_path / f"m1-{cycle[0]}.db")), 2, 0.5, cycle) > 0
        assert run(("postgresql", postgres_server.new_store()), 2, 0.5, cycle) > 0
