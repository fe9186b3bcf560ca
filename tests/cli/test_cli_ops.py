"""``acidstore show``, ``advise`` and ``clean`` on real warehouses: open transactions, locks,
reader leases, the compaction queue, the initiator's decision and the cleaner's pass."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from cli_support import make_warehouse, run, run_json, run_process

import acidstore
from acidstore.cli.progress import ProgressBar
from acidstore.engine.handle import handle_of
from compaction import compact


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return make_warehouse(tmp_path / "wh")


def test_show_transactions_and_locks_show_an_open_writer(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with acidstore.connect(warehouse) as wh:
        txn = wh.transaction()
        txn.table("shop.orders").insert(
            pa.table({"id": [9], "status": ["x"], "dt": ["2026-11-24"]}))
        try:
            txns = run_json(["show", "transactions", "--warehouse", str(warehouse)], capsys)
            assert [t["state"] for t in txns] == ["committed"] * 6 + ["open"]
            assert txns[-1]["txn_id"] == txn.txn_id and txns[-1]["finished"] is None
            opened = run_json(["show", "transactions", "--open", "--warehouse",
                               str(warehouse)], capsys)
            assert [t["txn_id"] for t in opened] == [txn.txn_id]
            locks = run_json(["show", "locks", "--warehouse", str(warehouse)], capsys)
            assert [(lk["txn_id"], lk["table"], lk["partition"]) for lk in locks] == [
                (txn.txn_id, "orders", "dt=2026-11-24")]
            code, out, _ = run(["show", "locks", "--warehouse", str(warehouse)], capsys)
            assert code == 0 and "dt=2026-11-24" in out.splitlines()[1]
        finally:
            txn.abort()
    code, out, _ = run(["show", "locks", "--warehouse", str(warehouse)], capsys)
    assert code == 0 and out.strip() == "no locks (no transaction is writing)"


def test_show_compactions_lists_the_queue(warehouse: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert run_json(["show", "compactions", "--warehouse", str(warehouse)], capsys) == []
    with acidstore.connect(warehouse) as wh:
        compact(wh.table("shop.orders"), "minor", "dt=2026-11-22")
    rows = run_json(["show", "compactions", "--warehouse", str(warehouse)], capsys)
    assert [(r["table"], r["partition"], r["kind"], r["state"]) for r in rows] == [
        ("shop.orders", "dt=2026-11-22", "minor", "ready for cleaning")]
    code, out, _ = run(["show", "compactions", "--warehouse", str(warehouse)], capsys)
    assert code == 0 and "ready for cleaning" in out


def _lease(warehouse: Path, hours: float = 1.0) -> int:
    """A Spark-like read lease of an hour on shop.orders, left behind by its reader."""
    with acidstore.connect(warehouse) as wh:
        _, _, lease = handle_of(wh.table("shop.orders")).leased_snapshot(
            ttl_seconds=hours * 3600)
    return lease


def test_a_stuck_lease_is_listed_and_released_and_the_cleaner_then_removes(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lease = _lease(warehouse)
    with acidstore.connect(warehouse) as wh:
        compact(wh.table("shop.orders"), "major", "dt=2026-11-22")
    leases = run_json(["show", "leases", "--warehouse", str(warehouse)], capsys)
    assert [(x["lease_id"], x["table"]) for x in leases] == [(lease, "shop.orders")]
    expires = datetime.fromisoformat(leases[0]["expires"])
    assert timedelta(minutes=50) < expires - datetime.now(UTC) <= timedelta(hours=1)

    # the lease's snapshot reads the four directories the major compaction replaced
    kept = run_json(["clean", "--warehouse", str(warehouse), "--retention", "0"], capsys)
    assert len(kept["kept_for_readers"]) == 4 and kept["removed"] == []
    assert kept["released_leases"] == []

    code, _, err = run(["clean", "--warehouse", str(warehouse), "--release-lease",
                        str(lease + 100)], capsys)
    assert code == 2 and f"no live reader lease {lease + 100}" in err
    assert f"live leases: [{lease}]" in err

    done = run_json(["clean", "--warehouse", str(warehouse), "--retention", "0",
                     "--release-lease", str(lease)], capsys)
    assert [x["lease_id"] for x in done["released_leases"]] == [lease]
    assert sorted(Path(p).name for p in done["removed"]) == [
        "delete_delta_0000004_0000004_0000", "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000", "delta_0000003_0000003_0000"]
    assert run_json(["show", "leases", "--warehouse", str(warehouse)], capsys) == []
    with acidstore.connect(warehouse) as wh:
        assert sorted(wh.table("shop.orders").to_arrow()["id"].to_pylist()) == [0, 2, 7]


def test_release_leases_older_than_keeps_young_ones(
        warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lease = _lease(warehouse)
    done = run_json(["clean", "--warehouse", str(warehouse),
                     "--release-leases-older-than", "1h"], capsys)
    assert done["released_leases"] == []
    done = run_json(["clean", "--warehouse", str(warehouse),
                     "--release-leases-older-than", "0.001s"], capsys)
    assert [x["lease_id"] for x in done["released_leases"]] == [lease]
    code, _, err = run(["clean", "--warehouse", str(warehouse),
                        "--release-leases-older-than", "soon"], capsys)
    assert code == 2 and "InvalidInputError: interval 'soon'" in err


def test_advise_reports_the_initiators_decision_and_its_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warehouse = tmp_path / "wh"
    with acidstore.connect(warehouse) as wh:
        clicks = wh.create_table("db.clicks", pa.schema([("id", pa.int64())]))
        for i in range(12):                    # 12 deltas: more than the 10 that queue one
            clicks.insert(pa.table({"id": [i, i + 100]}))
        clicks.delete("id >= 100")
        quiet = wh.create_table("db.quiet", pa.schema([("id", pa.int64())]),
                                properties={"NO_AUTO_COMPACTION": "true"})
        for i in range(12):
            quiet.insert(pa.table({"id": [i]}))
        few = wh.create_table("db.few", pa.schema([("id", pa.int64())]))
        few.insert(pa.table({"id": [1]}))
    rows = {r["table"]: r for r in run_json(["advise", "--warehouse", str(warehouse)], capsys)}
    assert rows["db.clicks"]["deltas"] == 13 and rows["db.clicks"]["delete_deltas"] == 1
    assert rows["db.clicks"]["rows_in_deltas"] == 24 and rows["db.clicks"]["delete_events"] == 12
    assert rows["db.clicks"]["delete_ratio"] == 0.5
    assert rows["db.clicks"]["read_amplification"] == 3.0     # 36 rows decoded for 12
    assert rows["db.clicks"]["decision"] == "major"           # no base yet
    assert rows["db.clicks"]["why"] == "13 deltas > 10"
    assert rows["db.quiet"]["decision"] is None
    assert "NO_AUTO_COMPACTION=true" in rows["db.quiet"]["why"]
    assert "otherwise major: 12 deltas > 10" in rows["db.quiet"]["why"]
    assert rows["db.few"]["decision"] is None
    assert rows["db.few"]["why"].startswith("no threshold crossed (more than 10 deltas")
    assert rows["db.few"]["read_amplification"] == 1.0
    # nothing was queued by advising
    assert run_json(["show", "compactions", "--warehouse", str(warehouse)], capsys) == []

    # what advise said is what the scheduler does; then advise shows the outcome
    done = run_process(["compact", "--warehouse", str(warehouse), "--auto"])
    assert done.returncode == 0, done.stderr
    after = {r["table"]: r for r in run_json(["advise", "--warehouse", str(warehouse)],
                                             capsys)}
    assert after["db.clicks"]["base"].startswith("base_0000013_v")
    assert after["db.clicks"]["read_amplification"] == 1.0
    assert "compaction 1 (major) ready for cleaning" in after["db.clicks"]["last_compaction"]
    assert after["db.quiet"]["last_compaction"] is None

    code, out, _ = run(["advise", "--warehouse", str(warehouse), "--table", "db.quiet"],
                       capsys)
    assert code == 0 and "db.clicks" not in out
    assert "db.quiet: no compaction: auto-compaction is off for this table" in out


def test_show_advise_and_clean_as_processes(warehouse: Path) -> None:
    lease = _lease(warehouse)
    for what, expected in (("transactions", "committed"), ("locks", "no locks"),
                           ("leases", f"{lease}  "), ("compactions", "no compactions")):
        done = run_process(["show", what, "--warehouse", str(warehouse)])
        assert done.returncode == 0 and expected in done.stdout, (what, done.stderr)
    done = run_process(["advise", "--warehouse", str(warehouse)])
    assert done.returncode == 0, done.stderr
    assert "shop.orders/dt=2026-11-22: no compaction: no threshold crossed" in done.stdout
    done = run_process(["clean", "--warehouse", str(warehouse), "--release-lease", str(lease)])
    assert done.returncode == 0, done.stderr
    assert f"released lease {lease} on shop.orders" in done.stdout
    assert "0 directories removed" in done.stdout


def test_compact_prints_json_when_asked(warehouse: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(["compact", "--warehouse", str(warehouse), "--table", "shop.orders",
                    "--kind", "minor", "--partition", "dt=2026-11-22"], capsys)
    assert doc["table"] == "shop.orders" and doc["kind"] == "minor"
    [part] = doc["partitions"]
    assert part["partition"] == "dt=2026-11-22" and len(part["inputs"]) == 4
    assert sorted(part["outputs"]) == [f"delete_delta_0000001_0000004_v{doc['txn_id']:07d}",
                                       f"delta_0000001_0000004_v{doc['txn_id']:07d}"]
    summary = run_json(["compact", "--warehouse", str(warehouse), "--auto",
                        "--retention", "0"], capsys)
    assert summary["queued"] == [] and summary["ran"] == []
    assert len(summary["cleaned"]["removed"]) == 4


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_drawn_on_a_terminal_only() -> None:
    log = io.StringIO()
    bar = ProgressBar("buckets", out=log)
    bar("major db.t", 1, 2)
    bar("major db.t", 2, 2)
    assert log.getvalue() == "" and not bar.active
    screen = _Terminal()
    bar = ProgressBar("buckets", out=screen)
    bar("major db.t", 1, 2)
    bar("major db.t", 2, 2)
    assert screen.getvalue().startswith("\r  major db.t")
    assert "[###############...............] 1/2 buckets" in screen.getvalue()
    assert screen.getvalue().endswith("] 2/2 buckets\n")
