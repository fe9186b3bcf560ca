"""The command line on the worked example table, and the demo command's options."""

from __future__ import annotations

from pathlib import Path

import pytest

from acidstore.cli import example as cli_example
from acidstore.cli.demo import resolve_master
from acidstore.cli.main import main


def test_example_inspect_and_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "t"
    assert main(["example", str(table)]) == 0
    capsys.readouterr()

    assert main(["inspect", str(table)]) == 0
    out = capsys.readouterr().out
    assert "base:          base_0000003_v0000012" in out

    # compaction txn 12 still open: the minor-compacted pair is read instead
    assert main(["inspect", str(table), "--txns", "11:11:11:"]) == 0
    out = capsys.readouterr().out
    assert "base:          -" in out
    assert "insert deltas: delta_0000001_0000003_v0000010" in out
    assert "delete deltas: delete_delta_0000001_0000003_v0000010" in out
    assert out.count("delete_delta_0000001_0000003_v0000010") == 1  # listed once

    assert main(["read", str(table), "--row-id"]) == 0
    out = capsys.readouterr().out
    assert "ann v2" in out and "bob" not in out and "536870913" in out
    assert "1 row(s)" in out

    assert main(["read", str(table), "--txns", "9:9::",
                 "--write-ids", "default.t:1:9223372036854775807::"]) == 0
    out = capsys.readouterr().out
    assert "ann" in out and "bob" in out and "2 row(s)" in out


def test_errors_are_reported_not_raised(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    (tmp_path / "delta_x").mkdir()
    assert main(["inspect", str(tmp_path)]) == 2
    assert "InvalidLayoutError" in capsys.readouterr().err
    assert main(["read", str(tmp_path / "missing")]) == 2


def test_demo_master_comes_from_the_flag_then_spark_master_then_local() -> None:
    assert resolve_master(None, {}) == "local[*]"
    assert resolve_master(None, {"SPARK_MASTER": "spark://h:7077"}) == "spark://h:7077"
    assert resolve_master("local[2]", {"SPARK_MASTER": "spark://h:7077"}) == "local[2]"


def test_demo_command_passes_its_options(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    """The wiring only: the pipeline itself runs in tests/cli/test_demo.py on the suite's one
    SparkSession (this test must not start another)."""
    calls: list[tuple[Path, dict[str, object]]] = []
    monkeypatch.setattr(cli_example, "run_demo",
                        lambda warehouse, **kw: calls.append((warehouse, kw)))
    assert main(["demo"]) == 0
    assert main(["demo", "--warehouse", str(tmp_path), "--master", "local[2]",
                 "--orders", "4000", "--metastore", "postgresql://u@h:5432/db"]) == 0
    assert calls == [
        (Path("demo-warehouse"), {"master": None, "orders": 6000, "metastore": None}),
        (tmp_path, {"master": "local[2]", "orders": 4000,
                    "metastore": "postgresql://u@h:5432/db"})]


def test_demo_refuses_a_load_too_small_before_starting_spark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--warehouse", str(tmp_path), "--orders", "10"]) == 2
    assert "InvalidInputError" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_compact_command_runs_through_the_entry_point(tmp_path: Path) -> None:
    """README documents ``acidstore compact``: the installed command must run it."""
    import subprocess

    import pyarrow as pa

    import acidstore

    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.t", pa.schema([("id", pa.int64())]))
        for i in range(3):
            t.insert(pa.table({"id": [i]}))
        t.delete("id = 1")
    done = subprocess.run(["acidstore", "compact", "--warehouse", str(tmp_path / "wh"),
                           "--table", "db.t", "--kind", "major"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "compaction txn" in done.stdout
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.table("db.t")
        assert sorted(t.to_arrow().column("id").to_pylist()) == [0, 2]
        names = sorted(p.name for p in Path(t.location).iterdir())
        assert any(n.startswith("base_0000004") for n in names), names
    auto = subprocess.run(["acidstore", "compact", "--warehouse", str(tmp_path / "wh"),
                           "--auto", "--retention", "0"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert auto.returncode == 0, auto.stderr
    missing = subprocess.run(["acidstore", "compact", "--warehouse", str(tmp_path / "wh"),
                              "--table", "db.nope"], capture_output=True, text=True,
                             timeout=300, check=False)
    assert missing.returncode == 2 and "TableNotFoundError" in missing.stderr
