"""A read-only warehouse (an archived copy nobody may write) reads, and refuses writes.

The copy's directories and files lose every write permission bit. SQLite's metastore is then
opened read-only (``mode=ro``, and ``immutable=1`` unless its ``-wal`` holds commits), reads
take no lease (no cleaner can run there), nothing in the copy is created or changed, and a
write raises ``ReadOnlyWarehouseError`` before touching anything.

Two ways, so that both the permission bits and an operating system that enforces them are
covered whoever runs the tests:
- in this process: as root, where the kernel would let every write through, the bits alone
  mark the copy read-only (root passes every access check, so acidstore goes by the bits);
- in a child process the kernel really refuses writes to (as root: without the capabilities
  that override file permissions; otherwise as this user), checked by a probe file it cannot
  create. There the copy is also taken while the source is still open, so its ``-wal`` holds
  commits that only a ``mode=ro`` open (not ``immutable``) reads.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from cli_support import ROOT, run

import acidstore
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.errors import ReadOnlyWarehouseError

TABLE = "db.t"
SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
#: after the writes of ``source``: ids 0..5, then 1 deleted, then 10 inserted
IDS = [0, 2, 3, 4, 5, 10]
FIRST_WRITE = [0, 1, 2, 3, 4, 5]


def write_source(location: Path) -> acidstore.Warehouse:
    wh = acidstore.connect(location)
    t = wh.create_table(TABLE, SCHEMA, partition_by=["dt"])
    t.insert(pa.table({"id": FIRST_WRITE, "dt": ["a", "b"] * 3}))
    t.delete("id = 1")
    t.insert(pa.table({"id": [10], "dt": ["a"]}))
    return wh


def make_read_only(root: Path) -> None:
    """No write bit for anyone; readable (and directories searchable) by everyone."""
    for path in [root, *root.rglob("*")]:
        readable = 0o555 if path.is_dir() else 0o444
        path.chmod((path.stat().st_mode & ~0o222) | readable)


def make_writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry of the copy with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def copies(tmp_path: Path) -> Iterator[Callable[[str, bool], Path]]:
    """``copy(name, live)``: a read-only copy of the source warehouse, taken after it was
    closed, or (``live``) while it is open (its ``-wal`` then holds commits)."""
    source = write_source(tmp_path / "source")
    made: list[Path] = []

    def copy(name: str, live: bool) -> Path:
        if not live:
            source.close()
        target = tmp_path / name
        shutil.copytree(source.location, target)
        made.append(target)
        make_read_only(target)
        return target

    yield copy
    source.close()
    for target in made:
        make_writable(target)  # so that the temporary directory can be removed


def test_a_read_only_copy_reads_and_refuses_writes(
        copies: Callable[[str, bool], Path], capsys: pytest.CaptureFixture[str]) -> None:
    copy = copies("archive", False)
    before = tree(copy)
    with acidstore.connect(copy, create=False) as wh:
        t = wh.table(TABLE)
        assert sorted(t.to_arrow().column("id").to_pylist()) == IDS
        assert sorted(t.to_batches(columns=["id"]).read_all().column("id").to_pylist()) == IDS
        assert sorted(t.to_arrow(as_of=1).column("id").to_pylist()) == FIRST_WRITE
        assert t.to_arrow(filter="id > 3").num_rows == 3
        assert wh.show_leases().num_rows == 0
        for write in (lambda: t.insert(pa.table({"id": [99], "dt": ["a"]})),
                      lambda: t.delete("id = 2"),
                      lambda: wh.create_table("db.u", SCHEMA),
                      lambda: wh.drop_table(TABLE)):
            with pytest.raises(ReadOnlyWarehouseError, match="read-only") as refused:
                write()
            assert refused.value.path == str(copy / DEFAULT_METASTORE_FILE)
        assert sorted(t.to_arrow().column("id").to_pylist()) == IDS
    code, out, err = run(["read", TABLE, "--warehouse", str(copy), "--json"], capsys)
    assert code == 0, err
    assert sorted(row["id"] for row in json.loads(out)["rows"]) == IDS
    code, _, err = run(["compact", "--warehouse", str(copy), "--table", TABLE], capsys)
    assert code == 2 and "ReadOnlyWarehouseError" in err
    assert tree(copy) == before  # nothing created, nothing changed


def test_cleaning_and_repair_of_a_read_only_copy_remove_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Cleaning (``Cleaner``, ``vacuum``, ``acidstore clean``) and ``fsck --repair`` removed
    an aborted write's directory from a read-only copy before anything else refused it:
    the cleaner deletes aborted directories before its first metastore write, and repair
    writes nothing to the metastore at all. As root (whom the bits do not stop) the archive
    lost files; both now refuse a read-only warehouse before touching anything."""
    from compaction import Cleaner, compact

    with write_source(tmp_path / "source") as wh:
        t = wh.table(TABLE)
        compact(t, "major")  # replaced directories for the cleaner
        txn = wh.transaction()  # an aborted write whose files stayed (a writer that died)
        txn.table(TABLE).insert(pa.table({"id": [77], "dt": ["a"]}))
        wh.metastore.abort(txn.txn_id)
    copy = tmp_path / "archive"
    shutil.copytree(tmp_path / "source", copy)
    make_read_only(copy)
    try:
        before = tree(copy)
        assert any("delta_0000004" in p for p in before)  # the aborted write's directory
        with acidstore.connect(copy, create=False) as archive:
            t = archive.table(TABLE)
            for clean in (lambda: Cleaner(archive, retention_seconds=0).run(),
                          lambda: t.vacuum(retention_seconds=0),
                          lambda: archive.fsck(repair=True)):
                with pytest.raises(ReadOnlyWarehouseError, match="read-only"):
                    clean()
                assert tree(copy) == before
            assert [f["check"] for f in archive.fsck().to_pylist()] == ["aborted_leftover"]
        for argv in (["clean", "--retention", "0"], ["fsck", "--repair"]):
            code, _, err = run([*argv, "--warehouse", str(copy)], capsys)
            assert code == 2 and "ReadOnlyWarehouseError" in err, err
        assert tree(copy) == before
    finally:
        make_writable(copy)


_CHILD = """
import json, sys
import pyarrow as pa
import acidstore
from acidstore.errors import ReadOnlyWarehouseError

report = {}
for copy in sys.argv[1:]:
    try:
        open(copy + "/probe", "w").close()
        enforced = False
    except PermissionError:
        enforced = True
    with acidstore.connect(copy, create=False) as wh:
        t = wh.table("db.t")
        ids = sorted(t.to_arrow().column("id").to_pylist())
        try:
            t.insert(pa.table({"id": [99], "dt": ["a"]}))
            refused = ""
        except ReadOnlyWarehouseError as exc:
            refused = str(exc)
    report[copy] = {"enforced": enforced, "ids": ids, "refused": refused}
print(json.dumps(report))
"""

#: Linux capabilities that let root past file permissions, and prctl's PR_CAPBSET_DROP
_OVERRIDES = {"CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3}
_PR_CAPBSET_DROP = 24


def _drop_overrides() -> None:
    """In the child before it runs Python: drop the overriding capabilities from the bounding
    set, which root's capabilities are recomputed from when it executes a program."""
    libc = ctypes.CDLL(None, use_errno=True)
    for name, number in _OVERRIDES.items():
        if libc.prctl(_PR_CAPBSET_DROP, number, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"cannot drop {name}")


def run_refused_writes(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv`` in a process whose writes to read-only files the kernel refuses."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    as_root = os.geteuid() == 0
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300,
                          check=False, preexec_fn=_drop_overrides if as_root else None)


def test_a_read_only_copy_reads_where_the_kernel_refuses_writes(
        copies: Callable[[str, bool], Path]) -> None:
    live = copies("live", True)
    assert (live / (DEFAULT_METASTORE_FILE + "-wal")).stat().st_size > 0
    closed = copies("closed", False)
    before = {str(c): tree(c) for c in (live, closed)}
    done = run_refused_writes([sys.executable, "-c", _CHILD, str(live), str(closed)])
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for copy in (live, closed):
        assert report[str(copy)]["enforced"], "the kernel let the child write"
        assert report[str(copy)]["ids"] == IDS
        assert "is read-only" in report[str(copy)]["refused"]
    done = run_refused_writes([sys.executable, "-m", "acidstore.cli.main", "read", TABLE,
                               "--warehouse", str(closed), "--json"])
    assert done.returncode == 0, done.stderr
    assert sorted(row["id"] for row in json.loads(done.stdout)["rows"]) == IDS
    assert before == {str(c): tree(c) for c in (live, closed)}
