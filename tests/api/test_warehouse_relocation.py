"""A warehouse directory (metastore file + tables) copied or moved elsewhere works there.

The metastore keeps table locations relative to the warehouse root, so a copy writes into its
own files: before that, a copy's metastore pointed at the original's directories and every
write to the copy landed in the original.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from pathlib import Path

import pyarrow as pa

import acidstore
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from compaction import Cleaner, compact

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


def rows(ids: range, dt: str = "a") -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"v{i}" for i in ids], "dt": [dt] * len(ids)},
                    schema=SCHEMA)


def fingerprint(root: Path) -> dict[str, str]:
    """Every table file under ``root`` with a hash of its bytes (the metastore excluded)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.startswith(DEFAULT_METASTORE_FILE):
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def ids(wh: acidstore.Warehouse) -> list[int]:
    return sorted(wh.table("db.t").to_arrow(columns=["id"]).column("id").to_pylist())


def make_original(root: Path) -> None:
    with acidstore.connect(root) as wh:
        t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)
        t.insert(rows(range(10)))
        t.delete("id = 3")


def write_to_copy_and_check(original: Path, copy: Path) -> None:
    before = fingerprint(original)
    with acidstore.connect(copy) as wh:
        t = wh.table("db.t")
        assert t.location == str(copy / "db.db" / "t")
        t.insert(rows(range(100, 105), dt="b"))
        t.update("id = 1", {"v": "'changed'"})
        compact(t, "major")
        Cleaner(wh, retention_seconds=0).run()
        wh.create_table("db.other", SCHEMA).insert(rows(range(2)))
        assert ids(wh) == [0, 1, 2, 4, 5, 6, 7, 8, 9, 100, 101, 102, 103, 104]
    assert fingerprint(original) == before  # not one file of the original changed
    assert not (original / "db.db" / "other").exists()
    with acidstore.connect(original) as wh:
        assert ids(wh) == [0, 1, 2, 4, 5, 6, 7, 8, 9]
        assert wh.tables() == ["db.t"]
        assert wh.table("db.t").to_arrow(filter="id = 1").column("v").to_pylist() == ["v1"]


def test_a_copied_warehouse_writes_into_the_copy_only(tmp_path: Path) -> None:
    original, copy = tmp_path / "wh", tmp_path / "copy"
    make_original(original)
    shutil.copytree(original, copy)
    write_to_copy_and_check(original, copy)


def test_a_moved_warehouse_opens_where_it_now_is(tmp_path: Path) -> None:
    old, new = tmp_path / "wh", tmp_path / "moved" / "wh"
    make_original(old)
    new.parent.mkdir()
    os.rename(old, new)
    with acidstore.connect(new) as wh:
        assert ids(wh) == [0, 1, 2, 4, 5, 6, 7, 8, 9]
        wh.table("db.t").insert(rows(range(20, 22)))
        assert ids(wh)[-2:] == [20, 21]
    assert not old.exists()


def test_a_copy_of_a_warehouse_made_before_relative_locations(tmp_path: Path) -> None:
    """A metastore of schema version 3 stored absolute locations; opening it (in place or in
    a copy) upgrades them, so the copy still writes only into itself."""
    original, copy = tmp_path / "wh", tmp_path / "copy"
    make_original(original)
    with sqlite3.connect(original / DEFAULT_METASTORE_FILE) as raw:  # as version 3 left it
        raw.execute("UPDATE tables SET location = ?", (str(original / "db.db" / "t"),))
        raw.execute("ALTER TABLE tables DROP COLUMN metadata_version")  # added by version 5
        raw.execute("UPDATE meta SET value = '3' WHERE name = 'schema_version'")
    shutil.copytree(original, copy)
    write_to_copy_and_check(original, copy)
