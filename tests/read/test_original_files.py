"""Original files in warehouse tables: a partition without a base takes every file outside
the ACID directories for pre-ACID rows (Hive's LOAD DATA and converted tables). A table
created at metastore schema 12 or later records every original it may hold (those
``adopt_table`` placed, none otherwise), so a file copied into a partition is never read as
rows no write made (reads and compactions plan from the record; fsck reports the file, and
the cleaner leaves it), and a recorded original removed, emptied or replaced is a
``MissingDataError`` rather than rows silently gone; reads, DML and compaction all stop on
it. Tables created before may hold unrecorded adopted originals and are read as before."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest
from stray_support import assert_compaction_ignores

import acidstore
from acidstore import Table, Warehouse
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.engine.handle import handle_of
from acidstore.errors import MissingDataError
from compaction import Cleaner, compact

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def actions(t: Table) -> list[Callable[[], object]]:
    """A read, both DML kinds that read the partition, and a major compaction."""
    return [t.to_arrow, lambda: t.delete("id = 1"), lambda: t.update("id = 2", {"id": "20"}),
            lambda: compact(t, "major")]


def ids(t: Table) -> list[int]:
    return sorted(t.to_arrow().column("id").to_pylist())


def test_a_file_copied_into_a_partition_is_not_read_and_fsck_reports_it(wh: Warehouse) -> None:
    """Reads, DML and compactions plan from the metastore's record, which names no such file:
    it is never read nor folded into a base. fsck reports it, and the cleaner leaves it
    (once a base exists the listing alone would call it obsolete)."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(pa.table({"id": [1, 2], "dt": ["a", "a"]}))
    assert handle_of(t).info.originals_recorded
    copied = Path(t.location) / "dt=a" / "000000_0"
    po.write_table(pa.table({"id": [99]}), str(copied))  # read as a row of the table before
    assert ids(t) == [1, 2]
    found = wh.fsck("db.t").to_pylist()
    assert [(f["check"], f["path"]) for f in found] == [("foreign_file", str(copied))]
    t.delete("id = 1")
    assert ids(t) == [2]
    assert_compaction_ignores(t, copied)
    assert ids(t) == [2]
    copied.unlink()
    assert ids(t) == [2]


@pytest.fixture
def adopted(wh: Warehouse, tmp_path: Path) -> Table:
    """db.a adopted from two ORC files of partition dt=x (ids 1, 2 and 3), no base yet."""
    source = tmp_path / "lake" / "dt=x"
    source.mkdir(parents=True)
    po.write_table(pa.table({"id": [1, 2]}), str(source / "000000_0"))
    po.write_table(pa.table({"id": [3]}), str(source / "000001_0"))
    t = wh.adopt_table("db.a", tmp_path / "lake", partition_by=["dt"])
    assert ids(t) == [1, 2, 3]
    return t


@pytest.mark.parametrize("how", ["removed", "emptied", "replaced"])
def test_an_adopted_original_gone_is_missing_data(adopted: Table, how: str) -> None:
    original = Path(adopted.location) / "dt=x" / "000001_0"
    if how == "removed":
        original.unlink()
    elif how == "emptied":
        original.write_bytes(b"")
    else:
        po.write_table(pa.table({"id": [3, 4, 5]}), str(original))
    for action in actions(adopted):
        with pytest.raises(MissingDataError, match="adopt_table placed original file") \
                as info:
            action()
        assert info.value.path == str(original)


def test_once_a_base_holds_the_originals_they_are_not_judged(wh: Warehouse,
                                                              adopted: Table) -> None:
    adopted.delete("id = 2")
    compact(adopted, "major")
    Cleaner(wh, retention_seconds=0).run()
    partition = Path(adopted.location) / "dt=x"
    assert not list(partition.glob("0*_0"))  # the cleaner removed what the base holds
    assert ids(adopted) == [1, 3]


def test_tables_from_before_the_record_read_their_originals_as_before(
        tmp_path: Path) -> None:
    """A table created before metastore schema 12 may have been adopted without a record of
    its originals: they are read, as they always were (fsck still reports them)."""
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.old", SCHEMA, partition_by=["dt"])
        t.insert(pa.table({"id": [1], "dt": ["a"]}))
        po.write_table(pa.table({"id": [7]}), str(Path(t.location) / "dt=a" / "000000_0"))
    with sqlite3.connect(tmp_path / "wh" / DEFAULT_METASTORE_FILE) as raw:
        raw.execute("UPDATE tables SET originals_recorded = 0")
    with acidstore.connect(tmp_path / "wh") as wh:
        old = wh.table("db.old")
        assert not handle_of(old).info.originals_recorded
        assert ids(old) == [1, 7]
