"""``acidstore read`` and ``inspect`` on warehouse tables use the metastore's snapshot: rows
of an open or aborted transaction stay invisible. Plain Hive directories keep the old mode
(every write present counts, unless --write-ids / --txns say otherwise)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from cli_support import make_warehouse, run, run_json, run_process

import acidstore
from acidstore.api.warehouse import Transaction


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return make_warehouse(tmp_path / "wh")


@pytest.fixture
def open_txn(warehouse: Path) -> Iterator[Transaction]:
    """A writer that inserted id 99 into dt=2026-11-22 and has not committed."""
    with acidstore.connect(warehouse) as wh:
        txn = wh.transaction()
        txn.table("shop.orders").insert(
            pa.table({"id": [99], "status": ["uncommitted"], "dt": ["2026-11-22"]}))
        try:
            yield txn
        finally:
            txn.abort()


def _ids(document: dict[str, list[dict[str, int]]]) -> list[int]:
    return sorted(r["id"] for r in document["rows"])


def test_read_hides_an_open_transactions_rows(
        warehouse: Path, open_txn: Transaction, capsys: pytest.CaptureFixture[str]) -> None:
    table_dir = warehouse / "shop.db" / "orders"
    assert _ids(run_json(["read", str(table_dir)], capsys)) == [0, 2, 7]
    assert _ids(run_json(["read", str(table_dir / "dt=2026-11-22")], capsys)) == [0, 2]
    assert _ids(run_json(["read", "shop.orders", "--warehouse", str(warehouse)],
                         capsys)) == [0, 2, 7]
    assert _ids(run_json(["read", "shop.orders", "--warehouse", str(warehouse),
                          "--partition", "dt=2026-11-23"], capsys)) == [7]
    code, out, _ = run(["read", str(table_dir)], capsys)
    assert code == 0 and "uncommitted" not in out and "3 row(s)" in out
    # the read's lease is released when it is done
    assert run_json(["show", "leases", "--warehouse", str(warehouse)], capsys) == []

    # a copy of the directory outside any warehouse has no metastore: every write counts
    copy = warehouse.parent / "copied_orders"
    shutil.copytree(table_dir, copy)
    assert _ids(run_json(["read", str(copy)], capsys)) == [0, 2, 7, 99]


def test_read_hides_an_aborted_transactions_rows(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with acidstore.connect(warehouse) as wh:
        txn = wh.transaction()
        txn.table("events").insert(pa.table({"n": [666]}))
        txn.abort()
    doc = run_json(["read", str(warehouse / "default.db" / "events")], capsys)
    assert sorted(r["n"] for r in doc["rows"]) == [1, 2]


def test_inspect_uses_the_warehouse_snapshot(
        warehouse: Path, open_txn: Transaction, capsys: pytest.CaptureFixture[str]) -> None:
    table_dir = warehouse / "shop.db" / "orders"
    [doc] = run_json(["inspect", str(table_dir / "dt=2026-11-22")], capsys)
    assert doc["table"] == "shop.orders"
    assert doc["write_ids"] == "shop.orders:6:6:6:"     # write id 6 (the open txn) excluded
    [part] = doc["partitions"]
    assert part["partition"] == "dt=2026-11-22"
    assert "delta_0000006_0000006_0000" not in part["insert_deltas"]
    assert len(part["insert_deltas"]) + len(part["delete_deltas"]) == 4
    code, out, _ = run(["inspect", str(table_dir)], capsys)
    assert code == 0 and "all committed" not in out
    assert "snapshot (from the warehouse's metastore): write ids shop.orders:6:6:6:" in out


def test_inspect_of_a_warehouse_root_reports_each_table(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = run_json(["inspect", str(warehouse)], capsys)
    assert [d["table"] for d in docs] == ["default.events", "shop.orders"]
    assert all(p["originals"] == [] for d in docs for p in d["partitions"])
    assert [p["partition"] for p in docs[1]["partitions"]] == ["dt=2026-11-22",
                                                              "dt=2026-11-23"]
    code, _, err = run(["read", str(warehouse)], capsys)
    assert code == 2
    assert "TableNotFoundError" in err and "is a warehouse; read one of its tables" in err


def test_missing_and_stray_paths_are_errors(
        warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("inspect", "read"):
        code, out, err = run([command, str(tmp_path / "nothing")], capsys)
        assert code == 2 and out == ""
        assert err == f"acidstore: TableNotFoundError: no table directory at " \
                      f"{tmp_path / 'nothing'}\n"
    (warehouse / "shop.db" / "scratch").mkdir()
    code, _, err = run(["inspect", str(warehouse / "shop.db" / "scratch")], capsys)
    assert code == 2 and "is inside the warehouse" in err and "shop.orders" in err
    code, _, err = run(["read", "shop.orders", "--warehouse", str(warehouse),
                        "--partition", "dt=1999-01-01"], capsys)
    assert code == 2 and "InvalidInputError: table shop.orders has no partition" in err
    code, _, err = run(["read", str(warehouse / "shop.db" / "orders"), "--partition", "x=1"],
                       capsys)
    assert code == 2 and "--partition goes with --warehouse" in err


def test_given_write_ids_replace_the_warehouse_snapshot(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Hive's strings still work inside a warehouse: here, as of write id 3 (before the
    delete of id 1)."""
    doc = run_json(["read", "shop.orders", "--warehouse", str(warehouse), "--write-ids",
                    "shop.orders:3:9223372036854775807::"], capsys)
    assert _ids(doc) == [0, 1, 2]
    for command in ("read", "inspect"):  # another table's write ids name other writes
        code, out, err = run([command, "shop.orders", "--warehouse", str(warehouse),
                              "--write-ids", "shop.other:3:9223372036854775807::"], capsys)
        assert (code, out) == (2, "")
        assert err == ("acidstore: InvalidInputError: --write-ids is a snapshot of shop.other, "
                       "not of shop.orders: write ids are numbered per table\n")


def test_read_and_inspect_as_processes(warehouse: Path, open_txn: Transaction) -> None:
    table_dir = warehouse / "shop.db" / "orders"
    done = run_process(["read", str(table_dir), "--columns", "id,status"])
    assert done.returncode == 0, done.stderr
    assert "uncommitted" not in done.stdout and "3 row(s)" in done.stdout
    done = run_process(["inspect", "shop.orders", "--warehouse", str(warehouse)])
    assert done.returncode == 0, done.stderr
    assert "write ids shop.orders:6:6:6:" in done.stdout
    assert "partition dt=2026-11-23" in done.stdout
    done = run_process(["inspect", str(warehouse / "nope")])
    assert done.returncode == 2 and "TableNotFoundError" in done.stderr


def test_a_reader_that_stops_early_is_no_error(tmp_path: Path) -> None:
    """``acidstore read ... | head -1``: the pipe's reader leaves after one line; the command
    stops quietly instead of printing a BrokenPipeError traceback."""
    import os
    import subprocess
    import sys

    from cli_support import ROOT

    with acidstore.connect(tmp_path / "wh") as wh:
        wh.create_table("db.big", pa.schema([("id", pa.int64()), ("s", pa.string())])).insert(
            pa.table({"id": list(range(50_000)), "s": ["x" * 40] * 50_000}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # 2.3 MB of rows: far more than a pipe holds, so the command is still writing when the
    # reader leaves
    with subprocess.Popen([sys.executable, "-m", "acidstore.cli.main", "read", "db.big",
                           "--warehouse", str(tmp_path / "wh"), "--limit", "50000"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=300)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert code == 1


def test_a_refused_read_releases_its_lease(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A read refused after its snapshot was leased (an unknown partition or column, a bad
    filter) used to leave the lease behind, so the cleaner kept every directory that snapshot
    selects for the lease's 300 s; the lease now ends with the command, as a read's does."""
    for extra in (["--partition", "dt=1999-01-01"], ["--columns", "nope"],
                  ["--filter", "nope = 1"]):
        code, _, err = run(["read", "shop.orders", "--warehouse", str(warehouse), *extra],
                           capsys)
        assert code == 2 and err.startswith("acidstore: "), err
        assert run_json(["show", "leases", "--warehouse", str(warehouse)], capsys) == [], extra


def test_a_negative_read_limit_is_refused(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--limit -1`` used to print "(no rows)" above "3 row(s)": a slice of -1 rows."""
    with pytest.raises(SystemExit) as info:
        run(["read", "shop.orders", "--warehouse", str(warehouse), "--limit", "-1"], capsys)
    out, err = capsys.readouterr()
    assert info.value.code == 2 and out == ""
    assert "argument --limit: must be 0 or more, got -1" in err
    assert run_json(["read", "shop.orders", "--warehouse", str(warehouse), "--limit", "0"],
                    capsys)["rows"] == []
