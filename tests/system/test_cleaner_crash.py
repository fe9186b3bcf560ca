"""Nothing obsolete or aborted outlives a crash (issue 12.5), with real processes killed.

A process dies (``os._exit``) at each point where a commit and its bookkeeping can part: a
direct compaction recorded but not committed, committed but its queue entry not moved on,
committed with no queue record at all; a worker's committed compaction; an INSERT
OVERWRITE (whose ``base_w`` hides older directories and never had a queue entry); an update
that wrote files but never committed; a cleaner pass that marked a partition, or removed one
directory. After each: the table reads the pre- or the post-state, a following write works,
and once the dead transaction has timed out the cleaner *alone* (no worker taking the entry
over) leaves in every partition exactly the directories the current snapshot reads. Then a
worker settles the queue, and nothing is left waiting.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cleaning_workers import DIED, POINTS, die_at
from compaction_support import (
    CleanBeforeLease,
    children,
    compactions,
    make_rows,
    new_table,
    read_exact,
)
from process_support import CONTEXT

import acidstore
from acidstore import Table, Warehouse
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.engine.handle import handle_of
from acidstore.format.directory import acid_state
from compaction import Cleaner, Worker, compact

TIMEOUT = 1.0  # txn timeout of the dying process (and the parent): its txn is reaped after it
STALE = 0.3  # its compaction worker's stale window: its queue entry is taken over after it


@pytest.fixture
def warehouse(tmp_path: Path) -> Iterator[tuple[str, Warehouse, Table]]:
    location = str(tmp_path / "wh")
    wh = acidstore.connect(location, txn_timeout=TIMEOUT)
    t = new_table(wh)
    for dt in ("a", "b"):
        t.insert(make_rows(range(10), dt=dt))
        t.insert(make_rows(range(20, 25), dt=dt))
    t.delete("dt = 'a' AND id % 4 = 0")
    yield location, wh, t
    wh.close()


def unread(t: Table) -> dict[str, list[str]]:
    """Per partition, the directories the current snapshot does not read (should be none)."""
    metastore = handle_of(t).core.metastore
    txns = metastore.valid_txns()
    write_ids = metastore.valid_write_ids(t.name, txns)
    out = {}
    for part in ("dt=a", "dt=b"):
        directory = os.path.join(t.location, part)
        state = acid_state(directory, write_ids, txns)
        read = {*state.deltas, *([state.base] if state.base else [])}
        extra = sorted(set(children(directory)) - read)
        if extra:
            out[part] = extra
    return out


def ids(t: Table) -> list[int]:
    return sorted(t.to_arrow(columns=["id"]).column("id").to_pylist())


@pytest.mark.parametrize("point", list(POINTS))
def test_nothing_obsolete_outlives_a_crash(warehouse: tuple[str, Warehouse, Table],
                                           point: str) -> None:
    location, wh, t = warehouse
    if POINTS[point] == "cleaner":
        compact(t, "major")  # what the dying cleaner is to remove
        assert unread(t)
    before = read_exact(t)
    child = CONTEXT.Process(target=die_at, args=(location, point, TIMEOUT, STALE))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == DIED, f"the process did not die at {point!r}"

    if POINTS[point] == "overwrite":  # committed: the post-state
        expected = [50, 51, 52, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 20, 21, 22, 23, 24]
        assert ids(t) == sorted(expected)
    else:  # nothing else changes what the table reads
        assert read_exact(t) == before
        expected = ids(t)

    time.sleep(TIMEOUT + 0.3)  # the dead transaction times out
    Cleaner(wh, retention_seconds=0).run()
    assert unread(t) == {}, "the cleaner alone left directories behind"
    assert ids(t) == sorted(expected)

    t.insert(make_rows([99], dt="b"))  # a following write works
    time.sleep(STALE + 0.1)
    Worker(wh, stale_seconds=STALE).run()  # takes over a dead process's queue entry
    Cleaner(wh, retention_seconds=0).run()
    assert [c["state"] for c in compactions(wh)
            if c["state"] not in ("succeeded", "refused")] == []
    assert unread(t) == {}
    assert ids(t) == sorted([*expected, 99])
    assert "open" not in {txn.state for txn in wh.metastore.show_transactions()}


def test_a_reader_leased_before_an_overwrite_keeps_what_it_hides(
        warehouse: tuple[str, Warehouse, Table]) -> None:
    """The cleaner removes what an overwrite's base hides, but never under a live lease."""
    _, wh, t = warehouse
    reader = t.to_batches(columns=["id"])
    t.insert_overwrite(make_rows(range(50, 53)))
    Cleaner(wh, retention_seconds=0).run()
    assert unread(t)["dt=a"]  # kept for the reader
    assert sorted(reader.read_all().column("id").to_pylist()) == sorted(
        [1, 2, 3, 5, 6, 7, 9, 21, 22, 23, *range(10), *range(20, 25)])
    Cleaner(wh, retention_seconds=0).run()
    assert unread(t) == {}
    assert ids(t) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 20, 21, 22, 23, 24, 50, 51, 52]


def test_an_overwrite_cleaned_between_snapshot_and_lease_is_not_lost(tmp_path: Path) -> None:
    """As issue 12.3 for compactions: an overwrite commits and the cleaner removes what its
    base hides after a reader took its snapshot but before its lease existed. The reader sees
    the overwrite it missed and takes its snapshot again (it read 0 rows of dt=a before)."""
    root = tmp_path / "wh"
    root.mkdir()
    store = CleanBeforeLease(root / DEFAULT_METASTORE_FILE)
    with acidstore.connect(root, metastore=store) as wh:
        t = new_table(wh)
        t.insert(make_rows(range(10)))
        t.delete("id = 0")

        def overwrite_and_clean() -> None:
            t.insert_overwrite(make_rows(range(50, 53)))
            assert Cleaner(wh, retention_seconds=0).run().removed

        store.armed = overwrite_and_clean
        got = t.to_arrow(columns=["id"])  # snapshot, [overwrite + clean], lease, read
        assert store.armed is None  # the interleaving did happen
        assert sorted(got.column("id").to_pylist()) == [50, 51, 52]
