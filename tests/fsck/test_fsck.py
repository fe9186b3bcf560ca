"""fsck (issue 13): every corruption of a real table is found with its check code and path;
sound tables, after many operations and after compaction and cleaning, give no finding;
``--repair`` removes an aborted write's leftover and nothing else; the CLI's exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from fsck_support import CORRUPTIONS, aborted_leftover, partitions, selected

import acidstore
from acidstore import Table, Warehouse
from acidstore.cli.main import main
from acidstore.errors import TableNotFoundError
from acidstore.fsck import FINDINGS_SCHEMA
from compaction import Cleaner, compact

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
ROOT = Path(__file__).resolve().parents[2]


def rows(ids: range, dt: str = "x") -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"v{i}" for i in ids], "dt": [dt] * len(ids)})


@pytest.fixture
def table(wh: Warehouse) -> Table:
    """Partitioned, bucketed; inserts, an update (split into delete + insert) and a delete."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)
    t.insert(pa.concat_tables([rows(range(20)), rows(range(20, 30), "y")]))
    t.update("id < 5", {"v": "'u'"})
    t.delete("id = 7 or id = 21")
    return t


def found(wh: Warehouse, table: str | None = None, **kwargs: bool) -> list[dict[str, object]]:
    result = wh.fsck(table, **kwargs)
    assert result.schema == FINDINGS_SCHEMA
    listed: list[dict[str, object]] = result.to_pylist()
    return listed


def test_a_sound_table_has_no_findings(wh: Warehouse, table: Table) -> None:
    assert found(wh) == []
    assert found(wh, "db.t") == []
    with pytest.raises(TableNotFoundError):
        wh.fsck("db.nope")


def test_sound_after_many_operations_compaction_and_cleaning(wh: Warehouse,
                                                             table: Table) -> None:
    other = wh.create_table("db.plain", pa.schema([("k", pa.int32()), ("s", pa.string())]))
    other.insert(pa.table({"k": pa.array([1, 2, 3], pa.int32()), "s": ["a", "b", "c"]}))
    other.delete("k = 2")
    with wh.transaction() as txn:  # several statements of one write id
        txn.table("db.t").insert(rows(range(40, 45)))
        txn.table("db.t").delete("id = 41")
        txn.table("db.t").update("id = 42", {"v": "'w'"})
    table.merge(rows(range(43, 48)), "t.id = s.id").when_matched_update({"v": "'m'"}) \
        .when_not_matched_insert_all().execute()
    assert found(wh) == []
    compact(table, "minor")
    assert found(wh) == []
    table.delete("id = 3")
    table.insert_overwrite(rows(range(100, 103), "y"))
    assert found(wh) == []
    compact(table, "major")
    compact(other, "major")
    Cleaner(wh, retention_seconds=0).run()
    assert found(wh) == []
    table.delete("id = 44")
    assert found(wh) == []


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_each_corruption_is_found(wh: Warehouse, table: Table, name: str) -> None:
    check, path = CORRUPTIONS[name](table)
    findings = found(wh)
    assert any(f["check"] == check and f["path"] == path for f in findings), findings
    hit = next(f for f in findings if f["check"] == check and f["path"] == path)
    assert hit["table"] == "db.t" and hit["repaired"] is False
    assert str(hit["message"])
    expected = "warning" if check == "aborted_leftover" else "error"
    assert hit["severity"] == expected
    partition = next((p for p in partitions(table) if path.startswith(f"{p}/")), None)
    if partition is not None:
        assert hit["partition"] == partition.name


@pytest.mark.parametrize("name", ["truncate_file", "garbage_file", "drop_key_index",
                                  "wrong_key_index", "duplicate_row_id", "unsorted_row_ids",
                                  "dangling_delete"])
def test_corruption_of_compacted_files_is_found(wh: Warehouse, table: Table, name: str) -> None:
    """Compacted directories (a minor-compacted pair) are checked the same way."""
    compact(table, "minor")
    Cleaner(wh, retention_seconds=0).run()
    check, path = CORRUPTIONS[name](table)
    assert "_v" in Path(path).parent.name  # dt=x was compacted (dt=y had too little)
    assert (check, path) in {(f["check"], f["path"]) for f in found(wh)}


@pytest.mark.parametrize("name", ["remove_bucket_file", "remove_directory"])
def test_missing_compacted_files_are_found(wh: Warehouse, table: Table, name: str) -> None:
    """A compaction's commit records its output directories and files: a bucket file (or
    the whole base) removed after the cleaner ran is reported, as a write's would be."""
    compact(table, "major")
    Cleaner(wh, retention_seconds=0).run()
    check, path = CORRUPTIONS[name](table)
    assert Path(path).name.startswith("base_") and "_v" in Path(path).name
    pairs = [(f["check"], f["path"]) for f in found(wh)]
    assert (check, path) in pairs
    assert len(pairs) == len(set(pairs))  # once, not once per write the base folded in


def test_a_delete_of_a_row_in_a_compacted_base_is_not_dangling(wh: Warehouse,
                                                               table: Table) -> None:
    compact(table, "major")
    Cleaner(wh, retention_seconds=0).run()
    table.delete("id = 9 or id = 25")  # rows of the base, keeping their ROW__IDs
    table.update("id = 1", {"v": "'again'"})
    assert found(wh) == []


def test_repair_removes_only_aborted_leftovers(wh: Warehouse, table: Table) -> None:
    _, leftover = aborted_leftover(table)
    committed = selected(table)
    before = table.to_arrow().sort_by("id")
    (Path(table.location) / "dt=x" / "junk.txt").write_text("x")  # readers fail on it
    listing = {f["check"]: f for f in found(wh)}
    assert listing["aborted_leftover"]["path"] == leftover
    assert Path(leftover).is_dir()  # reporting changes nothing
    repaired = {f["check"]: f for f in found(wh, repair=True)}
    assert repaired["aborted_leftover"]["repaired"] is True
    assert repaired["foreign_file"]["repaired"] is False
    assert not Path(leftover).exists()
    assert all(d.is_dir() for d in committed)
    assert (Path(table.location) / "dt=x" / "junk.txt").exists()
    assert [f["check"] for f in found(wh)] == ["foreign_file"]
    (Path(table.location) / "dt=x" / "junk.txt").unlink()
    assert table.to_arrow().sort_by("id").equals(before)


def test_repair_does_not_touch_an_open_write(wh: Warehouse, table: Table) -> None:
    with wh.transaction() as txn:
        txn.table("db.t").insert(rows(range(60, 62)))
        assert found(wh, repair=True) == []  # an open write is neither wrong nor garbage
    assert found(wh) == []


# --- the command line --------------------------------------------------------------------------


def test_cli_exit_codes_json_and_repair(wh: Warehouse, table: Table,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    where = str(Path(wh.location))
    assert main(["fsck", "--warehouse", where]) == 0
    assert "0 finding(s)" in capsys.readouterr().out
    _, leftover = aborted_leftover(table)
    assert main(["fsck", "--warehouse", where]) == 0  # a warning only
    out = capsys.readouterr().out
    assert "aborted_leftover" in out and leftover in out
    check, path = CORRUPTIONS["garbage_file"](table)
    assert main(["fsck", "--warehouse", where, "--table", "db.t", "--json"]) == 1
    listed = json.loads(capsys.readouterr().out)
    assert {(f["check"], f["path"]) for f in listed} >= {(check, path),
                                                         ("aborted_leftover", leftover)}
    assert main(["fsck", "--warehouse", where, "--repair"]) == 1  # the error remains
    capsys.readouterr()
    assert not Path(leftover).exists() and Path(path).exists()


def test_cli_refuses_a_missing_warehouse_and_creates_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"
    assert main(["fsck", "--warehouse", str(missing)]) == 2
    assert "no warehouse" in capsys.readouterr().err
    assert not missing.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["fsck", "--warehouse", str(empty)]) == 2
    assert list(empty.iterdir()) == []


def test_cli_unknown_table_is_a_command_failure(wh: Warehouse, table: Table,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fsck", "--warehouse", str(wh.location), "--table", "db.nope"]) == 2
    assert "TableNotFoundError" in capsys.readouterr().err


def test_cli_in_a_subprocess(tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
        t.insert(rows(range(5)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    command = [sys.executable, "-m", "acidstore.cli.main", "fsck", "--warehouse",
               str(tmp_path / "wh")]
    sound = subprocess.run(command, check=False, capture_output=True, text=True, env=env,
                           timeout=120)
    assert sound.returncode == 0, sound.stderr
    victim = next((tmp_path / "wh" / "db.db" / "t" / "dt=x").glob("delta_*"))
    shutil.rmtree(victim)
    broken = subprocess.run([*command, "--json"], check=False, capture_output=True, text=True,
                            env=env, timeout=120)
    assert broken.returncode == 1, broken.stderr
    assert [(f["check"], f["path"]) for f in json.loads(broken.stdout)] == [
        ("missing_directory", str(victim))]


def test_an_unrecorded_directory_is_reported_after_compaction_and_cleaning(
        wh: Warehouse, table: Table) -> None:
    """A delta copied in under a committed write id is an error while a snapshot selects
    it; once a compaction replaced what it would hold, nothing selects it, but no record
    names it either: the cleaner leaves it and fsck keeps naming it, as a warning (nothing
    reads it), with the exit code of a warehouse without errors."""
    partition = Path(table.location, "dt=x")
    (source,) = [d for d in partition.iterdir() if d.name.startswith("delta_0000001_")]
    copy = partition / (source.name[:-4] + "0009")
    shutil.copytree(source, copy)
    before = [(f["check"], f["severity"]) for f in found(wh) if f["path"] == str(copy)]
    assert before == [("unknown_write", "error")]
    assert compact(table, "major").compacted
    Cleaner(wh, retention_seconds=0).run()
    assert copy.is_dir()
    after = [(f["check"], f["severity"]) for f in found(wh)]
    assert after == [("unknown_write", "warning")]
    assert main(["fsck", "--warehouse", wh.location]) == 0
    shutil.rmtree(copy)
    assert found(wh) == []
