"""Smoke test of benchmark M1 (``benchmarks.metastore``): two writer processes for half a
second on each backend; ``run`` itself fails if a write id was lost or duplicated."""

from __future__ import annotations

from pathlib import Path

from benchmarks.metastore import run
from benchmarks.postgres_server import PostgresServer


def test_m1_runs_on_both_backends(tmp_path: Path, postgres_server: PostgresServer) -> None:
    assert run(("sqlite", str(tmp_path / "m1.db")), 2, 0.5) > 0
    assert run(("postgresql", postgres_server.new_store()), 2, 0.5) > 0
