"""Warehouses for the command-line tests, and the command run the two ways users run it:
in this process through ``acidstore.cli.main.main`` and as a real process of ``python -m
acidstore.cli.main`` (what the installed ``acidstore`` script runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import acidstore
from acidstore.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
ORDERS = pa.schema([("id", pa.int64()), ("status", pa.string()), ("dt", pa.string())])


def make_warehouse(path: Path) -> Path:
    """shop.orders (partitioned by dt, 2 buckets): three inserts into one day and a delete,
    one insert into another day; plus an unpartitioned default.events with one insert."""
    with acidstore.connect(path) as wh:
        orders = wh.create_table("shop.orders", ORDERS, partition_by=["dt"], bucket_by=["id"],
                                 buckets=2, properties={"owner": "sales"})
        for i in range(3):
            orders.insert(pa.table({"id": [i], "status": ["new"], "dt": ["2026-11-22"]}))
        orders.delete("id = 1")
        orders.insert(pa.table({"id": [7], "status": ["new"], "dt": ["2026-11-23"]}))
        events = wh.create_table("events", pa.schema([("n", pa.int64())]))
        events.insert(pa.table({"n": [1, 2]}))
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``acidstore ARGV`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    code, out, err = run([*argv, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


def run_process(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``acidstore ARGV`` as its own process, importing this source tree."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "acidstore.cli.main", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
