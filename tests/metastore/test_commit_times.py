"""Commit times come from the metastore and rise with commit order, whatever a client's clock.

The clients with a wrong clock are real processes under libfaketime (``clock_support``): one
30 s slow from its start, one whose clock steps after it connected. Before, a commit took its
client's clock (on PostgreSQL plus an offset measured once per connection): the slow
writer's write 2 got a time before write 1's, ``history()`` listed them out of order, and
``as_of`` between the two read write 2 without write 1, a state the table never had.

On PostgreSQL the server's clock decides, inside the commit. SQLite serves one machine, whose
clock every process shares: a process whose own clock is off (only libfaketime makes one) still
cannot commit before the commit it follows, but its commit takes the microsecond after that
one rather than the moment it really happened.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from clock_support import run_skewed
from metastore_support import place_fixture  # noqa: F401  (the `place` fixture)
from table_workers import Place, connect

from acidstore import Warehouse
from compaction import compact

TABLE = "db.t"
MICROSECOND = timedelta(microseconds=1)


def ids(wh: Warehouse, as_of: datetime | None = None) -> list[int]:
    return sorted(wh.table(TABLE).to_arrow(as_of=as_of).column("id").to_pylist())


def commit_times(wh: Warehouse) -> list[datetime]:
    history = wh.table(TABLE).history()
    assert history.column("write_id").to_pylist() == list(range(1, history.num_rows + 1))
    times: list[datetime] = history.column("commit_time").to_pylist()
    return times


def spec(place: Place, *steps: list[Any]) -> dict[str, Any]:
    return {"place": list(place) if isinstance(place, tuple) else place, "table": TABLE,
            "steps": [list(step) for step in steps]}


def started(place: Place) -> Warehouse:
    wh = connect(place)
    wh.create_table(TABLE, pa.schema([("id", pa.int64())]))
    return wh


def test_a_writer_30_seconds_slow_commits_after_the_write_before_it(
        place: Place, tmp_path: Path) -> None:
    with started(place) as wh:
        wh.table(TABLE).insert(pa.table({"id": [1]}))
        [first] = commit_times(wh)
        before_second = datetime.now(UTC)  # the machine's clock, before write 2 commits
        slow = run_skewed("-30", spec(place, ["insert", 2]), tmp_path)
        assert datetime.fromisoformat(slow["clocks"][0]) < first  # its clock really was slow
        one, two = commit_times(wh)
        assert one == first and two > one
        assert ids(wh, as_of=one) == [1]  # between the two commits: write 1's state exactly
        assert ids(wh, as_of=two - MICROSECOND) == [1]
        assert ids(wh, as_of=two) == [1, 2]
        if isinstance(place, tuple):  # PostgreSQL: the server's clock, at the real moment
            assert two >= before_second
            assert ids(wh, as_of=before_second) == [1]
        else:  # SQLite: the slow process's clock was behind write 1, so the next microsecond
            assert two == one + MICROSECOND


def test_a_client_clock_stepped_after_connecting_does_not_move_commit_times(
        postgres_place: Place, tmp_path: Path) -> None:
    """The old offset, measured once per connection, carried a later step of the client's
    clock into every time it sent; commit times, and the start and heartbeat of its
    transactions, are the server's now."""
    with started(postgres_place) as wh:
        before = datetime.now(UTC)
        stepped = run_skewed("+0", spec(postgres_place, ["insert", 1], ["shift", "-600"],
                                        ["insert", 2]), tmp_path)
        assert datetime.fromisoformat(stepped["clocks"][-1]) < before  # 10 minutes back
        one, two = commit_times(wh)
        assert before <= one < two
        assert ids(wh, as_of=one) == [1]
        shown = wh.show_transactions().to_pylist()
        assert len(shown) == 2 and all(t["started"] >= before for t in shown)


def test_a_client_clock_stepped_ahead_reaps_no_live_transaction(
        postgres_place: Place, tmp_path: Path) -> None:
    """A client whose clock jumped 10 minutes ahead after it connected took every other
    client's transaction for one without a heartbeat for 10 minutes, and aborted it (the
    timeout is 5): the transaction of a live writer was lost."""
    with started(postgres_place) as wh:
        with wh.transaction() as txn:
            txn.table(TABLE).insert(pa.table({"id": [1]}))
            run_skewed("+0", spec(postgres_place, ["shift", "+600"], ["insert", 2]), tmp_path)
            states = {t["txn_id"]: t["state"] for t in wh.show_transactions().to_pylist()}
            assert states[txn.txn_id] == "open"
        assert ids(wh) == [1, 2]


def test_a_cleaner_with_a_fast_clock_keeps_what_time_travel_needs(
        postgres_place: Place, tmp_path: Path) -> None:
    """The cleaner waits ``retention_seconds`` after a compaction's commit, on the
    metastore's clock: one on a host whose clock is an hour ahead removed the replaced
    deltas at once, and time travel before the compaction failed."""
    with started(postgres_place) as wh:
        table = wh.table(TABLE)
        for row in (1, 2, 3):
            table.insert(pa.table({"id": [row]}))
        [_, second, _] = commit_times(wh)
        compact(table, "major")
        cleaned = run_skewed("+3600", spec(postgres_place, ["clean"]), tmp_path)
        assert cleaned["removed"] == []
        assert ids(wh, as_of=second) == [1, 2]


@pytest.fixture
def postgres_place(tmp_path: Path, request: pytest.FixtureRequest) -> Place:
    """A warehouse directory with a metastore of its own on the test PostgreSQL server."""
    return str(tmp_path / "wh"), request.getfixturevalue("postgres_server").new_store()
