"""A compaction worker killed at each step, in a real spawned process (spec §10.2).

The dead worker's claim goes stale; a second worker takes the entry over, aborts the dead
compaction transaction (unless it had committed), removes its ``_v<txn>`` output and
compacts again. The table reads exactly the same rows (ROW__IDs included) at every point,
and the cleaner finally leaves only the new directories.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from compaction_support import (
    TABLE,
    children,
    compactions,
    make_rows,
    new_table,
    read_exact,
    txn_states,
)
from compaction_workers import DIED, STEPS, die_at
from process_support import CONTEXT

import acidstore
from acidstore import Table, Warehouse
from compaction import Cleaner, Worker

STALE = 0.5  # the stale window of both workers (a claim keeps its own worker's)


@pytest.fixture
def warehouse(tmp_path: Path) -> Iterator[tuple[str, Warehouse, Table]]:
    location = str(tmp_path / "wh")
    wh = acidstore.connect(location)
    t = new_table(wh, buckets=4)
    for dt in ("a", "b"):
        t.insert(make_rows(range(12), dt=dt))
        t.insert(make_rows(range(20, 28), dt=dt))
        t.delete(f"dt = '{dt}' AND id % 5 = 0")
    yield location, wh, t
    wh.close()


def with_suffix(t: Table, txn: int) -> list[str]:
    suffix = f"_v{txn:07d}"
    return [f"{p}/{n}" for p in ("dt=a", "dt=b") for n in children(os.path.join(t.location, p))
            if n.endswith(suffix)]


def bucket_files(t: Table, relative: str) -> list[str]:
    return [n for n in os.listdir(os.path.join(t.location, relative))
            if n.startswith("bucket_")]


def outputs(kind: str, partition: str, txn: int) -> list[str]:
    """What a compaction in ``txn`` makes of a partition (write ids 1-3 in dt=a, 4-6 in b)."""
    low, high = (1, 3) if partition == "dt=a" else (4, 6)
    if kind == "major":
        return [f"base_{high:07d}_v{txn:07d}"]
    return [f"delete_delta_{low:07d}_{high:07d}_v{txn:07d}",
            f"delta_{low:07d}_{high:07d}_v{txn:07d}"]


@pytest.mark.parametrize(("step", "kind"), list(zip(STEPS, ["major", "minor", "major",
                                                              "minor"], strict=True)))
def test_a_dead_worker_is_taken_over(warehouse: tuple[str, Warehouse, Table], step: str,
                                     kind: str) -> None:
    location, wh, t = warehouse
    before = read_exact(t)
    for part in ("dt=a", "dt=b"):
        assert wh.metastore.enqueue_compaction(TABLE, part, kind, "test")  # type: ignore[arg-type]
    child = CONTEXT.Process(target=die_at, args=(location, step, STALE))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == DIED, f"the worker did not die at {step!r}"

    dead, waiting = compactions(wh)
    assert (dead["state"], dead["partition"], waiting["state"]) == (
        "working", "dt=a", "initiated")
    dead_txn = dead["txn_id"]
    if step == "claimed":
        assert dead_txn is None
    else:
        assert txn_states(wh)[dead_txn] == ("committed" if step == "committed" else "open")
        left = with_suffix(t, dead_txn)
        if step == "txn opened":
            assert left == []
        else:
            assert sorted(left) == ["dt=a/" + n for n in outputs(kind, "dt=a", dead_txn)]
            written = sum(len(bucket_files(t, d)) for d in left)
            # some buckets: the first bucket's base file (of 4); committed: all of them
            assert written == 1 if step == "some buckets written" else written > 1
    assert read_exact(t) == before  # nothing of the dead attempt is visible

    time.sleep(STALE + 0.2)
    taken = Worker(wh, name="second", stale_seconds=STALE).run()
    assert [(e.partition, e.state, e.worker) for e in taken] == [
        ("dt=a", "ready for cleaning", "second"), ("dt=b", "ready for cleaning", "second")]
    first = taken[0]
    assert first.attempts == 2
    if step == "committed":  # the dead worker's compaction stands; nothing is redone
        assert first.txn_id == dead_txn
    else:
        assert first.txn_id is not None and first.txn_id != dead_txn
        assert txn_states(wh)[first.txn_id] == "committed"
        if dead_txn is not None:
            assert txn_states(wh)[dead_txn] == "aborted"
            assert with_suffix(t, dead_txn) == []
    assert read_exact(t) == before

    report = Cleaner(wh, retention_seconds=0).run()
    assert sorted(report.cleaned) == [e.compaction_id for e in taken]
    for entry in taken:
        assert entry.txn_id is not None
        assert children(os.path.join(t.location, entry.partition)) == outputs(
            kind, entry.partition, entry.txn_id)
    assert read_exact(t) == before
    assert "open" not in txn_states(wh).values()
