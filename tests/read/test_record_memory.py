"""A process remembers the committed components of a table (``read.record_memory``) and
loads only the commits since: it must answer exactly what a fresh load from the metastore
answers, whatever another process commits, aborts, holds open, compacts, cleans or drops
in between; and reads that use it must see what a fresh process sees."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from process_support import CONTEXT
from record_memory_workers import SCHEMA, TABLE, rows, writer

import acidstore
from acidstore import Warehouse
from acidstore.metastore import Metastore
from acidstore.metastore.protocol import CommitLog
from acidstore.read import record_memory
from acidstore.read.recorded import _by_partition as by_partition

#: what the other process does, in this order, with the memory checked after each step
STEPS = ["insert", "insert", "abort", "hold", "insert", "update", "delete", "abort",
         "release", "insert", "major", "insert", "hold", "update", "clean", "release",
         "delete", "recreate", "insert", "abort", "insert"]


class Writer:
    """The other process: sends one command, waits for its answer."""

    def __init__(self, root: Path) -> None:
        self.commands, self.answers = CONTEXT.Queue(), CONTEXT.Queue()
        self.process = CONTEXT.Process(target=writer,
                                       args=(str(root), self.commands, self.answers))
        self.process.start()

    def __call__(self, command: str) -> None:
        self.commands.put(command)
        answer = self.answers.get(timeout=120)
        assert answer == ("ok", command), answer

    def stop(self) -> None:
        self.commands.put(None)
        self.process.join(timeout=60)
        assert self.process.exitcode == 0


@pytest.fixture
def other(tmp_path: Path) -> Iterator[tuple[Path, Writer]]:
    root = tmp_path / "wh"
    with acidstore.connect(root) as wh:
        wh.create_table(TABLE, SCHEMA, partition_by=["dt"]).insert(rows([1, 2]))
    writer_process = Writer(root)
    try:
        yield root, writer_process
    finally:
        writer_process.stop()


def fresh(root: Path, floor: int) -> list[Any]:
    """What a process that remembers nothing loads."""
    with acidstore.connect(root) as wh:
        return wh.metastore.committed_components(TABLE, min_write_id=floor or None)


def remembered(metastore: Metastore, floor: int) -> list[Any]:
    return record_memory.committed_components(metastore, TABLE, floor)


def test_sqlite_offers_the_commit_log(wh: Warehouse) -> None:
    assert isinstance(wh.metastore, CommitLog)


def test_the_memory_answers_as_a_fresh_load_beside_another_process(
        other: tuple[Path, Writer]) -> None:
    root, run = other
    # one memory asked from the start (floor 0), one at a floor above the first writes, and
    # one that lowers its floor half way (all loaded again); each its own metastore object
    whole, above, lowered = (acidstore.connect(root) for _ in range(3))
    try:
        for number, step in enumerate(STEPS):
            run(step)
            assert remembered(whole.metastore, 0) == fresh(root, 0), (number, step)
            # what a snapshot's check derives from it is recomputed once anything is new
            assert record_memory.derived(whole.metastore, TABLE, 0, by_partition) == \
                by_partition(fresh(root, 0)), (number, step)
            for floor in (3, 6):
                assert remembered(above.metastore, floor) == fresh(root, floor), \
                    (number, step, floor)
            floor = 5 if number < len(STEPS) // 2 else 1
            assert remembered(lowered.metastore, floor) == fresh(root, floor), (number, step)
            # a read through the memory sees what a fresh process reads
            with acidstore.connect(root) as new:
                expected = new.table(TABLE).to_arrow().sort_by("id")
            assert whole.table(TABLE).to_arrow().sort_by("id").equals(expected), step
    finally:
        for wh in (whole, above, lowered):
            wh.close()


def test_dml_in_this_process_after_another_process_commits(
        other: tuple[Path, Writer]) -> None:
    root, run = other
    with acidstore.connect(root) as wh:
        table = wh.table(TABLE)
        table.update("id = 1", {"id": "11"})   # remembers the record
        run("insert")                           # id 101 (dt=a) committed elsewhere
        run("hold")                             # id 102, open
        table.delete("id = 11")
        run("release")
        table.update("id = 102", {"id": "202"})
        assert sorted(table.to_arrow().column("id").to_pylist()) == [2, 101, 202]
        assert remembered(wh.metastore, 0) == fresh(root, 0)


def _copy(source: Path, target: Path) -> None:
    """SQLite's online backup: a consistent copy whatever the WAL holds."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def test_a_metastore_restored_from_an_older_copy_is_loaded_again(tmp_path: Path) -> None:
    """A lower commit sequence than the one held means the metastore went back in time (a
    backup restored into it): what is held names commits it no longer has, so all is loaded
    again."""
    root = tmp_path / "wh"
    with acidstore.connect(root) as wh:
        table = wh.create_table(TABLE, SCHEMA, partition_by=["dt"])
        table.insert(rows([1]))
        db, backup = root / "_acidstore_metastore.db", tmp_path / "backup.db"
        _copy(db, backup)
        table.insert(rows([2]))
        table.insert(rows([3]))
        assert len(remembered(wh.metastore, 0)) == len(fresh(root, 0)) == 3
        _copy(backup, db)
        assert len(fresh(root, 0)) == 1
        assert remembered(wh.metastore, 0) == fresh(root, 0)
