"""``acidstore tables``, ``describe``, ``history`` and ``--version``, and the rule that no
command turns a misspelled ``--warehouse`` into a new empty warehouse."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pyarrow as pa
import pytest
from cli_support import make_warehouse, run, run_json, run_process

import acidstore
from acidstore.errors import WarehouseNotFoundError
from compaction import compact


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return make_warehouse(tmp_path / "wh")


def test_tables_lists_names_partitioning_and_bucketing(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["tables", "--warehouse", str(warehouse)], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["table", "partition_by", "bucket_by", "buckets", "location"]
    assert lines[1].split()[:4] == ["default.events", "-", "-", "0"]
    assert lines[2].split()[:4] == ["shop.orders", "dt", "id", "2"]
    rows = run_json(["tables", "--warehouse", str(warehouse)], capsys)
    assert [r["table"] for r in rows] == ["default.events", "shop.orders"]
    assert rows[1]["location"] == str(warehouse / "shop.db" / "orders")
    only = run_json(["tables", "--warehouse", str(warehouse), "--database", "shop"], capsys)
    assert [r["table"] for r in only] == ["shop.orders"]


def test_describe_counts_deltas_per_partition_at_the_current_snapshot(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(["describe", "shop.orders", "--warehouse", str(warehouse)], capsys)
    assert [c["name"] for c in doc["columns"]] == ["id", "status"]
    assert doc["partition_columns"] == [{"name": "dt", "type": "string"}]
    assert (doc["bucket_by"], doc["buckets"]) == (["id"], 2)
    assert doc["properties"]["owner"] == "sales"
    by_partition = {p["partition"]: p for p in doc["partitions"]}
    assert by_partition["dt=2026-11-22"]["insert_deltas"] == 3
    assert by_partition["dt=2026-11-22"]["delete_deltas"] == 1
    assert by_partition["dt=2026-11-23"]["insert_deltas"] == 1
    assert doc["bytes"] == sum(p["bytes"] for p in doc["partitions"]) > 0

    with acidstore.connect(warehouse) as wh:
        compact(wh.table("shop.orders"), "major", "dt=2026-11-22")
    doc = run_json(["describe", "shop.orders", "--warehouse", str(warehouse)], capsys)
    day = next(p for p in doc["partitions"] if p["partition"] == "dt=2026-11-22")
    assert day["base"].startswith("base_0000004_v") and day["insert_deltas"] == 0
    assert day["obsolete"] == 4   # replaced, waiting for the cleaner

    code, out, _ = run(["describe", "shop.orders", "--warehouse", str(warehouse)], capsys)
    assert code == 0
    assert "bucketing:    2 buckets by id" in out and "owner=sales" in out
    assert "partitioned:  dt (string)" in out
    assert doc["app_versions"] == [] and "app_id" not in out


def test_describe_lists_the_versions_of_idempotent_writers(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with acidstore.connect(warehouse) as wh:
        t = wh.table("default.events")
        rows = t.to_arrow().slice(0, 1)
        first = t.insert(rows, app_id="nightly-load", version=41)
        t.insert(rows, app_id="backfill", version=3)
        t.insert(rows, app_id="nightly-load", version=41)  # skipped: nothing changes
    doc = run_json(["describe", "events", "--warehouse", str(warehouse)], capsys)
    assert [(a["app_id"], a["version"]) for a in doc["app_versions"]] == [
        ("backfill", 3), ("nightly-load", 41)]
    assert doc["app_versions"][1]["txn_id"] == first.txn_id
    code, out, _ = run(["describe", "events", "--warehouse", str(warehouse)], capsys)
    assert code == 0
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["app_id", "version"])
    assert lines[header + 2].split()[:3] == ["nightly-load", "41", str(first.txn_id)]


def test_history_has_one_row_per_committed_write(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = run_json(["history", "shop.orders", "--warehouse", str(warehouse)], capsys)
    assert [(r["write_id"], r["operation"]) for r in rows] == [
        (1, "insert"), (2, "insert"), (3, "insert"), (4, "delete"), (5, "insert")]
    assert rows[3]["rows_deleted"] == 1 and rows[4]["partitions"] == ["dt=2026-11-23"]
    assert rows[0]["commit_time"].endswith("+00:00")   # ISO 8601 with its zone
    code, out, _ = run(["history", "shop.orders", "--warehouse", str(warehouse)], capsys)
    assert code == 0 and out.splitlines()[4].split()[4] == "delete"  # (time: 2 words)


def test_unknown_table_is_a_table_not_found_error(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["describe", "shop.nope"], ["history", "shop.nope"],
                    ["advise", "--table", "shop.nope"]):
        code, out, err = run([*command, "--warehouse", str(warehouse)], capsys)
        assert code == 2 and out == ""
        assert err.startswith("acidstore: TableNotFoundError: ") and "shop.nope" in err


@pytest.mark.parametrize("command", [
    ["tables"], ["describe", "t"], ["history", "t"], ["show", "transactions"],
    ["show", "leases"], ["advise"], ["clean"], ["compact", "--auto"],
    ["read", "t"], ["inspect", "t"]])
def test_a_misspelled_warehouse_is_an_error_and_creates_nothing(
        tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "wherehouse"
    code, _, err = run([*command, "--warehouse", str(missing)], capsys)
    assert code == 2
    assert f"acidstore: WarehouseNotFoundError: no warehouse at {missing}" in err
    assert not missing.exists()
    # a directory without a metastore is no warehouse either, and gets none
    missing.mkdir()
    code, _, err = run([*command, "--warehouse", str(missing)], capsys)
    assert code == 2 and "has no metastore file" in err
    assert list(missing.iterdir()) == []


def test_an_explicit_sqlite_metastore_must_exist_too(
        warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'nowhere.db'}"
    code, _, err = run(["tables", "--warehouse", str(warehouse), "--metastore", url], capsys)
    assert code == 2 and "WarehouseNotFoundError: no metastore at" in err
    assert not (tmp_path / "nowhere.db").exists()


def test_connect_create_false_opens_an_existing_warehouse_only(tmp_path: Path) -> None:
    with pytest.raises(WarehouseNotFoundError):
        acidstore.connect(tmp_path / "nope", create=False)
    assert not (tmp_path / "nope").exists()
    with acidstore.connect(tmp_path / "wh") as wh:
        wh.create_table("t", pa.schema([("a", pa.int64())]))
    with acidstore.connect(tmp_path / "wh", create=False) as wh:
        assert wh.tables() == ["default.t"]


def test_version_and_catalog_commands_as_processes(warehouse: Path) -> None:
    done = run_process(["--version"])
    assert done.returncode == 0 and done.stdout.strip() == f"acidstore {version('acidstore')}"
    done = run_process(["tables", "--warehouse", str(warehouse)])
    assert done.returncode == 0 and "shop.orders" in done.stdout, done.stderr
    done = run_process(["describe", "shop.orders", "--warehouse", str(warehouse), "--json"])
    assert done.returncode == 0 and '"buckets": 2' in done.stdout, done.stderr
    done = run_process(["history", "events", "--warehouse", str(warehouse)])
    assert done.returncode == 0 and " insert " in done.stdout, done.stderr
    done = run_process(["tables", "--warehouse", str(warehouse.parent / "typo")])
    assert done.returncode == 2 and "WarehouseNotFoundError" in done.stderr
    assert not (warehouse.parent / "typo").exists()


def test_python_dash_m_acidstore_is_the_command(warehouse: Path) -> None:
    """``python -m acidstore`` failed ("No module named acidstore.__main__") where the
    installed script is not on PATH (a virtualenv not activated, a cron job): it runs the
    same command, with the same exit statuses."""
    import os
    import subprocess
    import sys

    from cli_support import ROOT

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}

    def run_m(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "acidstore", *argv], env=env,
                              capture_output=True, text=True, timeout=300, check=False)

    done = run_m("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"acidstore {version('acidstore')}"
    done = run_m("tables", "--warehouse", str(warehouse))
    assert done.returncode == 0 and "shop.orders" in done.stdout, done.stderr
    done = run_m("tables", "--warehouse", str(warehouse.parent / "typo"))
    assert done.returncode == 2 and "WarehouseNotFoundError" in done.stderr


def test_help_speaks_to_data_engineers() -> None:
    done = run_process(["--help"])
    assert done.returncode == 0
    for command in ("tables", "describe", "history", "show", "advise", "compact", "clean",
                    "inspect", "read"):
        assert f"\n  {command}" in done.stdout, command
    texts = [done.stdout] + [run_process([c, "--help"]).stdout
                             for c in ("read", "inspect", "show", "clean", "advise")]
    for text in texts:
        for jargon in ("layer L", "spec §", "``", "the main job"):
            assert jargon not in text, (jargon, text)
    assert "hive.txn.valid.writeids" in texts[1] and "high-water-mark" in texts[1]


@pytest.mark.parametrize(("command", "usage"), [
    (["tables"], "usage: acidstore tables"), (["show", "leases"], "usage: acidstore show"),
    (["compact", "--auto"], "usage: acidstore compact")])
def test_an_unknown_option_is_shown_with_its_commands_usage(
        warehouse: Path, command: list[str], usage: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        run([*command, "--warehouse", str(warehouse), "--bogus"], capsys)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert usage in err and "unrecognized arguments: --bogus" in err
