"""Time travel across compactions (acidstore.read.time_travel): while the cleaner's retention keeps
what a compaction replaced, a read ``as_of`` a point before the compaction reads those
directories and returns exactly what it returned before; once the cleaner has begun, a read
that needs the folded-away history raises ``NotEnoughHistoryError`` rather than missing rows.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from compaction_support import TABLE, children, make_rows, new_table

import acidstore
from acidstore import Table, Warehouse
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.engine.handle import handle_of
from acidstore.errors import InvalidInputError, NotEnoughHistoryError
from acidstore.metastore.sql_schema import SCHEMA_VERSION
from compaction import Cleaner, compact


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    warehouse = acidstore.connect(tmp_path / "wh")
    yield warehouse
    warehouse.close()


def rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def changed(t: Table) -> dict[int, list[tuple[object, ...]]]:
    """Inserts, an update and a delete (write ids 1..5), and the table as of each write id."""
    for i in range(3):
        t.insert(make_rows([i]))
    t.update("id = 1", {"name": "'renamed'"})
    t.delete("id = 2")
    return {w: rows(t.to_arrow(as_of=w)) for w in range(0, 6)}


def test_as_of_reads_around_a_major_compaction_during_retention(wh: Warehouse) -> None:
    t = new_table(wh)
    history = changed(t)
    moments = {w: t.history().column("commit_time").to_pylist()[w - 1] for w in range(1, 6)}
    result = compact(t, "major")
    part = os.path.join(t.location, "dt=a")
    assert f"base_0000005_v{result.txn_id:07d}" in children(part)
    assert Cleaner(wh, retention_seconds=3600).run().removed == []
    assert {w: rows(t.to_arrow(as_of=w)) for w in range(0, 6)} == history
    assert {w: rows(t.to_arrow(as_of=moments[w])) for w in range(1, 6)} == {
        w: history[w] for w in range(1, 6)}
    # the streaming reader and a planned scan take the same past snapshot
    assert rows(t.to_batches(as_of=3).read_all()) == history[3]
    assert rows(handle_of(t).scan(as_of=3).to_table()) == history[3]
    assert rows(t.to_arrow()) == history[5]


def test_once_cleaned_the_past_before_a_major_compaction_is_gone(wh: Warehouse) -> None:
    t = new_table(wh)
    history = changed(t)
    result = compact(t, "major")
    Cleaner(wh, retention_seconds=0).run()
    assert children(os.path.join(t.location, "dt=a")) == [f"base_0000005_v{result.txn_id:07d}"]
    with pytest.raises(NotEnoughHistoryError):
        t.to_arrow(as_of=3)
    assert rows(t.to_arrow(as_of=5)) == history[5]
    assert rows(t.to_arrow()) == history[5]


def test_cleaning_begun_ends_time_travel_before_it_even_with_files_left(wh: Warehouse) -> None:
    """The cleaner flags a compaction before it removes anything: from then on the past it
    replaced may be incomplete on disk, so time travel must not read around it."""
    t = new_table(wh)
    history = changed(t)
    compact(t, "major")
    assert rows(t.to_arrow(as_of=2)) == history[2]
    flagged = wh.metastore.begin_cleaning(TABLE, "dt=a", wh.metastore.valid_txns())
    assert len(flagged) == 1
    with pytest.raises(NotEnoughHistoryError):
        t.to_arrow(as_of=2)
    assert wh.show_compactions().column("cleaning_started").null_count == 0


def test_a_leased_past_snapshot_keeps_what_the_compaction_replaced(wh: Warehouse) -> None:
    t = new_table(wh)
    history = changed(t)
    compact(t, "major")
    part = os.path.join(t.location, "dt=a")
    before = children(part)
    reader = t.to_batches(as_of=4)  # leased before the cleaner runs
    report = Cleaner(wh, retention_seconds=0).run()
    # write id 5's delete delta is not in that past: only it may go
    assert [os.path.basename(p) for p in report.removed] == ["delete_delta_0000005_0000005_0000"]
    assert report.kept_for_readers
    assert children(part) == [c for c in before if not c.startswith("delete_delta_0000005")]
    assert rows(reader.read_all()) == history[4]
    del reader
    Cleaner(wh, retention_seconds=0).run()
    assert len(children(part)) == 1


def test_only_compactions_after_the_point_are_read_around(wh: Warehouse) -> None:
    t = new_table(wh)
    history = changed(t)
    first = compact(t, "major")
    t.insert(make_rows([7]))
    t.delete("id = 0")
    history.update({w: rows(t.to_arrow(as_of=w)) for w in (6, 7)})
    compact(t, "major")
    Cleaner(wh, retention_seconds=3600).run()
    assert {w: rows(t.to_arrow(as_of=w)) for w in range(0, 8)} == history
    # the first compaction is before write id 6: that past reads its base
    txns, _ = handle_of(t).read_snapshot(as_of=6)
    assert first.txn_id is not None and txns.is_txn_valid(first.txn_id)


def test_time_travel_to_a_moment_before_any_write(wh: Warehouse) -> None:
    """Between the table's creation and its first commit it existed, empty; before its
    creation it did not, and an empty answer would pass for a version it never had."""
    t = new_table(wh)
    created = datetime.now(UTC)
    changed(t)
    compact(t, "major")
    assert t.to_arrow(as_of=created).num_rows == 0
    assert t.to_arrow(as_of=0).num_rows == 0
    with pytest.raises(InvalidInputError, match=r"before db\.\w+ was created"):
        t.to_arrow(as_of=datetime(2000, 1, 1, tzinfo=UTC))


def test_a_schema_2_metastore_upgrades_in_place(tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh:
        t = new_table(wh)
        changed(t)
        compact(t, "major")
    path = tmp_path / "wh" / DEFAULT_METASTORE_FILE
    with sqlite3.connect(path) as con:  # what a version-2 file looks like
        con.execute("ALTER TABLE compactions DROP COLUMN cleaning_started")
        con.execute("ALTER TABLE tables DROP COLUMN metadata_version")
        con.execute("UPDATE meta SET value = '2' WHERE name = 'schema_version'")
    con.close()
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.table(TABLE)
        assert t.to_arrow(as_of=2).num_rows == 2
        assert wh.metastore.begin_cleaning(TABLE, "dt=a", wh.metastore.valid_txns())
        with pytest.raises(NotEnoughHistoryError):
            t.to_arrow(as_of=2)
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT value FROM meta WHERE name = 'schema_version'"
                           ).fetchone()[0] == str(SCHEMA_VERSION)
    con.close()


def test_time_travel_before_a_cleaned_insert_overwrite_is_not_enough_history(
        wh: Warehouse) -> None:
    """An INSERT OVERWRITE's base hides the deltas below it; once the cleaner removed them, a
    read as of before the overwrite cannot be answered: NotEnoughHistoryError, not the
    MissingDataError of a file lost by hand (and never fewer rows)."""
    t = wh.create_table("db.io", pa.schema([("id", pa.int64())]))
    t.insert(pa.table({"id": [1, 2, 3]}))
    t.insert(pa.table({"id": [4]}))
    t.insert_overwrite(pa.table({"id": [9]}))
    assert rows(t.to_arrow(as_of=2)) == [(1,), (2,), (3,), (4,)]  # kept until cleaned
    Cleaner(wh, retention_seconds=0).run()
    for before in (1, 2):
        with pytest.raises(NotEnoughHistoryError, match="base_0000003"):
            t.to_arrow(as_of=before)
    assert rows(t.to_arrow(as_of=3)) == [(9,)]
    assert rows(t.to_arrow()) == [(9,)]


_LOCAL_AS_OF = """
import sys, time
from datetime import datetime, timezone
import acidstore
wh = acidstore.connect(sys.argv[1])
t = wh.table("db.tz")
mid, after = float(sys.argv[2]), float(sys.argv[3])
print(time.tzname[0], t.to_arrow(as_of=datetime.fromtimestamp(mid)).num_rows,
      t.to_arrow(as_of=datetime.fromtimestamp(mid, timezone.utc)).num_rows,
      t.to_arrow(as_of=datetime.fromtimestamp(after)).num_rows,
      t.to_arrow(as_of=datetime.now()).num_rows)
"""


@pytest.mark.parametrize("zone", ["Asia/Kolkata", "America/New_York"])
def test_a_naive_as_of_is_local_time(tmp_path: Path, zone: str) -> None:
    """A naive datetime was read as UTC, so ``as_of=datetime.now()`` named a moment 5.5 hours
    ahead in Kolkata (every row) and 4-5 hours back in New York (none). It is local time, as
    ``datetime.timestamp()`` takes it; an aware one keeps its zone. Run in a child process
    under each ``TZ``: the moment between two commits must find the first one only."""
    import subprocess
    import sys
    import time

    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.tz", pa.schema([("id", pa.int64())]))
    t.insert(pa.table({"id": [1]}))
    time.sleep(0.05)
    mid = time.time()
    time.sleep(0.05)
    t.insert(pa.table({"id": [2]}))
    after = time.time() + 0.05
    wh.close()
    root = str(Path(acidstore.__file__).parents[1])
    env = {**os.environ, "TZ": zone,
           "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _LOCAL_AS_OF, str(tmp_path / "wh"), str(mid),
                           str(after)], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    name, *counts = done.stdout.split()
    assert name != "UTC"  # the child really ran in another zone
    assert [int(c) for c in counts] == [1, 1, 2, 2]
