"""Compaction plans from the metastore's record, as reads do (``compaction.plan``).

What it costs the storage: a minor or a major compaction of one partition of a table of
100 partitions lists no directory and opens only the files it compacts; the initiator's
decision over the 100 lists nothing either. Counted by a ``pyarrow.fs.PyFileSystem``
handler over the local disk (``counting_support``), never timed.

What it refuses: a recorded bucket file removed, emptied or cut short since its commit, in
a base or a delta, stops both a minor compaction (which copies event files as they are, so
it would fold the gap into its output for good) and a major one with ``MissingDataError``
naming the file, and the table reads as before (same rows, no output left behind).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from counting_support import CountingHandler, counted_calls

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import MissingDataError
from acidstore.read import plan_memory
from compaction import Cleaner, compact
from compaction.initiator import Thresholds, assess_table
from compaction.plan import Kind

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int64())])
PARTITIONS = 100


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[tuple[Warehouse, CountingHandler]]:
    handler = CountingHandler(pafs.LocalFileSystem(), atomic_rename=True)
    (tmp_path / "wh").mkdir()
    with acidstore.connect(str(tmp_path / "wh"), filesystem=pafs.PyFileSystem(handler),
                           metastore=f"sqlite:///{tmp_path}/metastore.db") as wh:
        yield wh, handler


def wide(wh: Warehouse) -> Table:
    """100 partitions, each written by two INSERTs and one DELETE: two insert deltas and a
    delete delta per partition."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["p"])
    for first in (0, 1):
        t.insert(pa.table({"id": [first + 2 * p for p in range(PARTITIONS)] * 2,
                           "p": list(range(PARTITIONS)) * 2}, schema=SCHEMA))
    t.delete("id % 2 = 1")
    return t


def files_of(location: str, partition: str) -> set[str]:
    return {str(p) for p in Path(location, partition).glob("*/bucket_*")}


@pytest.mark.parametrize("kind", ["minor", "major"])
def test_compacting_one_partition_lists_nothing_and_opens_only_its_files(
        counted: tuple[Warehouse, CountingHandler], kind: Kind) -> None:
    wh, handler = counted
    t = wide(wh)
    before = t.to_arrow(filter="p = 7", with_row_id=True).sort_by("id")
    inputs = files_of(t.location, "p=7")
    assert len(inputs) == 3
    calls, opened, result = counted_calls(handler, lambda: compact(t, kind, partition="p=7"))
    assert result.compacted  # type: ignore[attr-defined]
    assert calls["list"] == 0, calls
    # its inputs, and its own outputs (read back once written), nothing of another partition
    outputs = files_of(t.location, "p=7") - inputs
    assert outputs and all("_v" in path for path in outputs)
    assert inputs <= set(opened) <= inputs | outputs, sorted(set(opened) ^ inputs)
    assert t.to_arrow(filter="p = 7", with_row_id=True).sort_by("id").equals(before)
    assert t.to_arrow().num_rows == 2 * PARTITIONS


def test_the_initiators_decision_lists_nothing(counted: tuple[Warehouse, CountingHandler]
                                               ) -> None:
    wh, handler = counted
    t = wide(wh)
    limits = Thresholds(delta_num=2)  # three deltas everywhere: each partition qualifies
    calls, opened, found = counted_calls(handler,
                                         lambda: assess_table(handle_of(t), limits))
    assert calls["list"] == 0 and calls["stat"] == 0 and not opened, calls
    assert isinstance(found, list) and len(found) == PARTITIONS
    assert {(a.kind, len(a.state.deltas)) for a in found if a.state} == {("major", 3)}
    assert all(a.delta_size > 0 and a.base_size == 0 for a in found)
    # the same decision as a listing makes (a table whose record may be incomplete)
    handle = handle_of(t)
    handle.info = type(handle.info)(**{**vars(handle.info), "originals_recorded": False})
    listed = assess_table(handle, limits)
    assert [(a.partition, a.kind, a.state and a.state.deltas) for a in listed] == \
        [(a.partition, a.kind, a.state and a.state.deltas) for a in found]


def test_the_initiator_plans_every_partition_in_one_batch(
        counted: tuple[Warehouse, CountingHandler], monkeypatch: pytest.MonkeyPatch) -> None:
    """Two record queries for the whole table (``RecordPlan.plan_many``), not two a
    partition: each is a round trip to a PostgreSQL metastore."""
    wh, _ = counted
    handle = handle_of(wide(wh))
    calls: Counter[str] = Counter()

    def counting(name: str, call: Callable[..., object]) -> Callable[..., object]:
        def counted(*args: object, **kwargs: object) -> object:
            calls[name] += 1
            return call(*args, **kwargs)
        return counted

    for name in ("compaction_outputs", "committed_components",
                 "compaction_outputs_by_partition", "committed_components_by_partition"):
        monkeypatch.setattr(handle.metastore, name,
                            counting(name, getattr(handle.metastore, name)))
    plan_memory.clear()  # from scratch: a plan kept from a read asks only for commits since
    found = assess_table(handle, Thresholds(delta_num=2))
    assert len(found) == PARTITIONS and all(a.kind == "major" for a in found)
    assert calls == {"compaction_outputs_by_partition": 1,
                     "committed_components_by_partition": 1}, calls


def test_the_initiator_sees_an_obsolete_base_only_while_it_is_there(wh: Warehouse) -> None:
    """The record keeps naming a base the cleaner removed: the initiator looks whether it
    is still there before it asks for a compaction to clear it."""
    t = wh.create_table("db.o", SCHEMA, partition_by=["p"])
    for i in range(3):
        t.insert(pa.table({"id": [i], "p": [1]}, schema=SCHEMA))
    assert compact(t, "major").compacted
    t.insert(pa.table({"id": [9], "p": [1]}, schema=SCHEMA))
    assert compact(t, "major").compacted  # the first base is obsolete now
    (found,) = assess_table(handle_of(t), Thresholds())
    assert (found.kind, found.reason) == ("major", "an obsolete base is left")
    Cleaner(wh, retention_seconds=0).run()
    (found,) = assess_table(handle_of(t), Thresholds())
    assert found.kind is None, found.reason


def test_the_initiator_counts_aborted_writes_from_the_record(wh: Warehouse) -> None:
    t = wh.create_table("db.a", SCHEMA, partition_by=["p"])
    t.insert(pa.table({"id": [1], "p": [1]}, schema=SCHEMA))
    for _ in range(2):
        txn = wh.transaction()
        txn.table("db.a").insert(pa.table({"id": [5], "p": [1]}, schema=SCHEMA))
        txn.abort("its job failed")
    (found,) = assess_table(handle_of(t), Thresholds(aborted_num=2))
    assert found.state is not None and len(found.state.aborted_write_ids) == 2
    assert found.kind == "major", found.reason
    (found,) = assess_table(handle_of(t), Thresholds(aborted_num=3,
                                                     aborted_age_seconds=-1))
    assert found.kind == "minor", found.reason


# --- a recorded file gone, emptied or cut short stops both compactions ----------------------


@pytest.fixture
def flat(wh: Warehouse) -> Table:
    """One partition of two buckets: a base (major compaction of two inserts and a delete)
    and, above it, two insert deltas and a delete delta."""
    t = wh.create_table("db.f", SCHEMA, partition_by=["p"], bucket_by=["id"], buckets=2)
    t.insert(pa.table({"id": list(range(10)), "p": [1] * 10}, schema=SCHEMA))
    t.insert(pa.table({"id": list(range(10, 14)), "p": [1] * 4}, schema=SCHEMA))
    t.delete("id < 2")
    assert compact(t, "major").compacted
    Cleaner(wh, retention_seconds=0).run()
    t.insert(pa.table({"id": [20, 21, 22, 23], "p": [1] * 4}, schema=SCHEMA))
    t.delete("id = 5 OR id = 6")
    t.insert(pa.table({"id": [30, 31, 32, 33], "p": [1] * 4}, schema=SCHEMA))
    return t


def victim(t: Table, prefix: str) -> Path:
    (directory,) = [d for d in Path(t.location, "p=1").iterdir() if d.name.startswith(prefix)]
    return sorted(directory.glob("bucket_*"))[-1]


def damage(file: Path, how: str) -> None:
    if how == "removed":
        file.unlink()
    elif how == "emptied":
        file.write_bytes(b"")
    else:  # cut short: its head is still there, so only the recorded size gives it away
        data = file.read_bytes()
        file.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("how", ["removed", "emptied", "truncated"])
@pytest.mark.parametrize("prefix", ["delta_0000004", "delete_delta_0000005", "delta_0000006"])
def test_a_damaged_delta_file_stops_both_compactions(flat: Table, how: str,
                                                     prefix: str) -> None:
    rows = flat.to_arrow(with_row_id=True).sort_by("id")
    assert rows.num_rows == 18
    file = victim(flat, prefix)
    listing = sorted(p.name for p in file.parent.parent.iterdir())
    damage(file, how)
    for kind in ("minor", "major"):
        with pytest.raises(MissingDataError, match=r"is not there|bytes, but it holds") \
                as caught:
            compact(flat, kind)
        assert caught.value.path == str(file)
        # nothing left behind, nothing committed: the partition is as it was
        assert sorted(p.name for p in file.parent.parent.iterdir()) == listing
    if how == "removed":  # a read stops on it too; put back, the table reads as before
        return
    with pytest.raises(MissingDataError):
        flat.to_arrow()


@pytest.mark.parametrize("how", ["removed", "emptied", "truncated"])
def test_a_damaged_base_file_stops_a_major_compaction(flat: Table, how: str) -> None:
    """A minor compaction does not read the base (it compacts the deltas above it); a major
    one does, and stops on the damaged file."""
    rows = flat.to_arrow(with_row_id=True).sort_by("id")
    file = victim(flat, "base_")
    saved = file.read_bytes()
    listing = sorted(p.name for p in file.parent.parent.iterdir())
    damage(file, how)
    with pytest.raises(MissingDataError, match=r"is not there|bytes, but it holds|is empty|"
                       r"but they hold") as caught:
        compact(flat, "major")
    assert caught.value.path == str(file)
    assert sorted(p.name for p in file.parent.parent.iterdir()) == listing
    file.write_bytes(saved)  # put back: nothing was committed, the rows are as before
    assert flat.to_arrow(with_row_id=True).sort_by("id").equals(rows)


def test_a_damaged_file_leaves_the_table_readable_once_put_back(flat: Table) -> None:
    """Each refusal committed nothing: with the file put back the table reads its rows, and
    both compactions then run over it and keep them."""
    rows = flat.to_arrow(with_row_id=True).sort_by("id")
    file = victim(flat, "delta_0000006")
    saved = file.read_bytes()
    file.write_bytes(saved[: len(saved) // 2])
    for kind in ("minor", "major"):
        with pytest.raises(MissingDataError):
            compact(flat, kind)
    file.write_bytes(saved)
    assert flat.to_arrow(with_row_id=True).sort_by("id").equals(rows)
    assert compact(flat, "minor").compacted
    assert flat.to_arrow(with_row_id=True).sort_by("id").equals(rows)
    assert compact(flat, "major").compacted
    assert flat.to_arrow(with_row_id=True).sort_by("id").equals(rows)


def test_an_event_file_copies_only_what_its_record_names(flat: Table) -> None:
    """The minor compaction's inputs come from the record: a file with the recorded name
    but other events than the compaction that wrote it recorded is refused (it would be
    copied as it is)."""
    import pyarrow.orc as po

    from acidstore.errors import DataError
    from acidstore.format.orc.file_writer import write_event_file

    assert compact(flat, "minor").compacted
    Cleaner(handle_of(flat).core, retention_seconds=0).run()
    flat.insert(pa.table({"id": [40], "p": [1]}, schema=SCHEMA))
    flat.insert(pa.table({"id": [41], "p": [1]}, schema=SCHEMA))
    (output,) = [d for d in Path(flat.location, "p=1").iterdir()
                 if d.name.startswith("delta_") and "_v" in d.name]
    file = sorted(output.glob("bucket_*"))[-1]
    events = po.ORCFile(str(file)).read()
    file.unlink()
    write_event_file(pafs.LocalFileSystem(), str(file), events.slice(1))  # one event fewer
    with pytest.raises(DataError, match=r"the compaction that wrote it recorded|of \d+ bytes"
                       ) as caught:
        compact(flat, "minor")
    assert caught.value.path in (str(file), str(output))
