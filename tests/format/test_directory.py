"""Directory selection (spec section 7) against the facts of Hive's TestAcidUtils.

Each Hive case is rebuilt as real directories under ``tmp_path`` and read back through
``acid_state``. Hive's mock files become real files; Hive compares some obsolete lists in its
own (listing-dependent) order, while ``AcidState.obsolete`` is sorted, so the expectations are
the same names, sorted. Cases marked "derived" follow AcidUtils' rules where Hive has no test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from directory_support import ALL_TXNS, LONG_MAX, TXN_50_OPEN, make, mark_compacted, reader
from hypothesis import given
from hypothesis import strategies as st

from acidstore.errors import InvalidLayoutError, NotEnoughHistoryError
from acidstore.format.directory import (
    AcidState,
    PartitionListing,
    acid_state,
    list_partition,
    select,
)
from acidstore.format.layout import ParsedBase, ParsedDelta
from acidstore.format.writeids import ValidCompactorWriteIdList, ValidTxnList, ValidWriteIdList
from acidstore.io.fs import Entry, resolve


@pytest.fixture
def part(tmp_path: Path) -> Path:
    return tmp_path / "tbl" / "part1"


# --- TestAcidUtils ----------------------------------------------------------------------------


def test_original(part: Path) -> None:
    make(part, "000000_0", "000000_0_copy_1", "000000_0_copy_2", "000001_1", "000002_0",
         "random")
    make(part, "_done", "subdir/000000_0", size=0)
    state = acid_state(part, reader(100))  # Hive sets no txn list here: no base/delta to gate
    assert state.base is None
    assert state.deltas == []
    assert state.obsolete == []
    assert state.original_files == ["000000_0", "000000_0_copy_1", "000000_0_copy_2",
                                    "000001_1", "000002_0", "random", "subdir/000000_0"]
    assert state.original_file_sizes["random"] == 500
    assert state.original_file_sizes["subdir/000000_0"] == 0


def test_original_deltas(part: Path) -> None:
    make(part, "000000_0", "000001_1", "000002_0", "random")
    make(part, "_done", "subdir/000000_0", "delta_025_025/bucket_0", "delta_029_029/bucket_0",
         "delta_025_030/bucket_0", "delta_050_100/bucket_0", "delta_101_101/bucket_0", size=0)
    state = acid_state(part, reader(100), ALL_TXNS)
    assert state.base is None
    assert state.obsolete == ["delta_025_025", "delta_029_029"]
    assert state.original_files == ["000000_0", "000001_1", "000002_0", "random",
                                    "subdir/000000_0"]
    assert state.deltas == ["delta_025_030", "delta_050_100"]
    assert state.delta_info["delta_025_030"] == ParsedDelta(25, 30)
    assert state.delta_info["delta_050_100"] == ParsedDelta(50, 100)
    assert state.delete_deltas == []


def test_base_deltas(part: Path) -> None:
    make(part, "base_5/bucket_0", "base_10/bucket_0", "base_49/bucket_0")
    make(part, "delta_025_025/bucket_0", "delta_029_029/bucket_0", "delta_025_030/bucket_0",
         "delta_050_105/bucket_0", "delta_90_120/bucket_0", size=0)
    state = acid_state(part, reader(100), ALL_TXNS)
    assert state.base == "base_49"
    assert state.base_info == ParsedBase(49)
    assert state.obsolete == sorted(["base_5", "base_10", "delta_025_030", "delta_025_025",
                                     "delta_029_029"])
    assert state.original_files == []
    assert state.deltas == ["delta_050_105"]  # delta_90_120 adds only ids above hwm 100
    assert state.delta_info["delta_050_105"] == ParsedDelta(50, 105)


def test_lone_base_zero_with_version_marker(part: Path) -> None:
    # testRecursiveDirListingIsReusedWhenSnapshotTrue: an all-valid list reads base_0 alone
    make(part, "base_0/bucket_0")
    make(part, "base_0/_orc_acid_version", size=1)
    state = acid_state(part, ValidWriteIdList.all_valid(), ALL_TXNS)
    assert state.base == "base_0"
    assert (state.obsolete, state.original_files, state.deltas) == ([], [], [])


def test_obsolete_originals(part: Path) -> None:
    make(part, "base_10/bucket_0", "base_5/bucket_0", "000000_0", "000001_1")
    state = acid_state(part, reader(150), ALL_TXNS)
    # the two original bucket files and the old base
    assert state.obsolete == ["000000_0", "000001_1", "base_5"]
    assert state.base == "base_10"
    assert state.original_files == []


def test_overlapping_delta(part: Path) -> None:
    make(part, "delta_0000063_63/bucket_0", "delta_000062_62/bucket_0",
         "delta_00061_61/bucket_0", "delta_40_60/bucket_0", "delta_0060_60/bucket_0",
         "delta_052_55/bucket_0", "base_50/bucket_0")
    state = acid_state(part, reader(100), ALL_TXNS)
    assert state.base == "base_50"
    assert state.obsolete == sorted(["delta_052_55", "delta_0060_60"])
    assert state.deltas == ["delta_40_60", "delta_00061_61", "delta_000062_62",
                            "delta_0000063_63"]


def test_overlapping_delta2_multi_statement(part: Path) -> None:
    make(part, "delta_0000063_63_0/bucket_0", "delta_000062_62_0/bucket_0",
         "delta_000062_62_3/bucket_0", "delta_00061_61_0/bucket_0", "delta_40_60/bucket_0",
         "delta_0060_60_1/bucket_0", "delta_0060_60_4/bucket_0", "delta_0060_60_7/bucket_0",
         "delta_052_55/bucket_0", "delta_058_58/bucket_0", "base_50/bucket_0")
    state = acid_state(part, reader(100), ALL_TXNS)
    assert state.base == "base_50"
    assert state.obsolete == sorted(["delta_052_55", "delta_058_58", "delta_0060_60_1",
                                     "delta_0060_60_4", "delta_0060_60_7"])
    assert state.deltas == ["delta_40_60", "delta_00061_61_0", "delta_000062_62_0",
                            "delta_000062_62_3", "delta_0000063_63_0"]


def test_deltas_with_open_txn_in_read(part: Path) -> None:
    make(part, "delta_1_1/bucket_0", "delta_2_5/bucket_0")
    state = acid_state(part, "tbl:100:4:4", TXN_50_OPEN)
    assert state.deltas == ["delta_1_1", "delta_2_5"]


def test_deltas_with_open_txn_in_read2(part: Path) -> None:
    make(part, "delta_1_1/bucket_0", "delta_2_5/bucket_0", "delta_4_4_1/bucket_0",
         "delta_4_4_3/bucket_0", "delta_101_101_1/bucket_0")
    state = acid_state(part, "tbl:100:4:4", TXN_50_OPEN)
    assert state.deltas == ["delta_1_1", "delta_2_5"]
    # write 4 is open and 101 is above the watermark: ignored, not obsolete
    assert state.obsolete == []
    assert state.aborted == []


def test_deltas_with_open_txns_not_in_compact(part: Path) -> None:
    make(part, "delta_1_1/bucket_0", "delta_2_5/bucket_0")
    compactor = ValidCompactorWriteIdList.parse(f"tbl:4:{LONG_MAX}")
    assert acid_state(part, compactor, ALL_TXNS).deltas == ["delta_1_1"]


def test_deltas_with_open_txns_not_in_compact2(part: Path) -> None:
    make(part, "delta_1_1/bucket_0", "delta_2_5/bucket_0", "delta_2_5/bucket_0_flush_length",
         "delta_6_10/bucket_0")
    compactor = ValidCompactorWriteIdList.parse(f"tbl:3:{LONG_MAX}")
    assert acid_state(part, compactor, ALL_TXNS).deltas == ["delta_1_1"]


def test_base_with_delete_deltas(part: Path) -> None:
    make(part, "base_5/bucket_0", "base_10/bucket_0", "base_49/bucket_0")
    make(part, "delta_025_025/bucket_0", "delta_029_029/bucket_0",
         "delete_delta_029_029/bucket_0", "delta_025_030/bucket_0",
         "delete_delta_025_030/bucket_0", "delta_050_105/bucket_0",
         "delete_delta_050_105/bucket_0", "delete_delta_110_110/bucket_0", size=0)
    state = acid_state(part, reader(100), ALL_TXNS)
    assert state.base == "base_49"
    assert state.obsolete == sorted(["base_5", "base_10", "delete_delta_025_030",
                                     "delta_025_030", "delta_025_025", "delete_delta_029_029",
                                     "delta_029_029"])
    assert state.original_files == []
    assert state.deltas == ["delete_delta_050_105", "delta_050_105"]
    assert state.delete_deltas == ["delete_delta_050_105"]
    # delete_delta_110_110 is above the high watermark: not read, not obsolete


def test_overlapping_delta_and_delete_delta(part: Path) -> None:
    make(part, "delta_0000063_63/bucket_0", "delta_000062_62/bucket_0",
         "delta_00061_61/bucket_0", "delete_delta_00064_64/bucket_0", "delta_40_60/bucket_0",
         "delete_delta_40_60/bucket_0", "delta_0060_60/bucket_0", "delta_052_55/bucket_0",
         "delete_delta_052_55/bucket_0", "base_50/bucket_0")
    state = acid_state(part, reader(100), ALL_TXNS)
    assert state.base == "base_50"
    assert state.obsolete == sorted(["delete_delta_052_55", "delta_052_55", "delta_0060_60"])
    assert state.deltas == ["delete_delta_40_60", "delta_40_60", "delta_00061_61",
                            "delta_000062_62", "delta_0000063_63", "delete_delta_00064_64"]
    assert state.delete_deltas == ["delete_delta_40_60", "delete_delta_00064_64"]


def test_minor_compacted_delta_makes_in_between_delete_delta_obsolete(part: Path) -> None:
    make(part, "delta_40_60/bucket_0", "delete_delta_50_50/bucket_0")
    state = acid_state(part, reader(100), ALL_TXNS)
    assert state.obsolete == ["delete_delta_50_50"]
    assert state.deltas == ["delta_40_60"]


def test_deltas_and_delete_deltas_with_open_txns_not_in_compact(part: Path) -> None:
    make(part, "delta_1_1/bucket_0", "delete_delta_2_2/bucket_0", "delta_2_5/bucket_0",
         "delete_delta_2_5/bucket_0", "delta_2_5/bucket_0_flush_length",
         "delete_delta_7_7/bucket_0", "delta_6_10/bucket_0")
    compactor = ValidCompactorWriteIdList.parse(f"tbl:4:{LONG_MAX}:")
    assert acid_state(part, compactor, ALL_TXNS).deltas == ["delta_1_1", "delete_delta_2_2"]


def test_delete_deltas_with_open_txn_in_read(part: Path) -> None:
    make(part, "delta_1_1/bucket_0", "delta_2_5/bucket_0", "delete_delta_2_5/bucket_0",
         "delete_delta_3_3/bucket_0", "delta_4_4_1/bucket_0", "delta_4_4_3/bucket_0",
         "delta_101_101_1/bucket_0")
    state = acid_state(part, "tbl:100:4:4", TXN_50_OPEN)
    assert state.deltas == ["delta_1_1", "delete_delta_2_5", "delta_2_5"]
    # delete_delta_3_3 is inside the minor-compacted [delete_]delta_2_5
    assert state.obsolete == ["delete_delta_3_3"]


# --- deltas: aborted ranges (derived from AcidUtils#processDeltaDir) --------------------------


def test_aborted_delta_ranges(part: Path) -> None:
    make(part, "delta_1_1/bucket_0", "delta_2_2/bucket_0", "delete_delta_2_2/bucket_0",
         "delta_3_5/bucket_0", "delta_6_7/bucket_0")
    state = acid_state(part, "tbl:7:9223372036854775807::2,4,6,7", ALL_TXNS)
    assert state.aborted == ["delete_delta_2_2", "delta_2_2", "delta_6_7"]
    assert state.aborted_write_ids == frozenset({2, 6, 7})
    assert state.has_uncompacted_aborts  # delta_3_5 holds aborted 4 among committed ids
    assert state.deltas == ["delta_1_1", "delta_3_5"]


def test_no_uncompacted_aborts_flag_without_partial_aborts(part: Path) -> None:
    make(part, "delta_1_1/bucket_0", "delta_2_2/bucket_0")
    state = acid_state(part, "tbl:2:9223372036854775807::2", ALL_TXNS)
    assert not state.has_uncompacted_aborts
    assert state.aborted == ["delta_2_2"]


def test_multi_statement_write_and_its_minor_compaction(part: Path) -> None:
    statements = ["delta_5_5_0", "delete_delta_5_5_0", "delta_5_5_1", "delete_delta_5_5_1",
                  "delta_5_5_2"]
    make(part, *(f"{d}/bucket_0" for d in statements))
    state = acid_state(part, reader(10), ALL_TXNS)
    assert state.deltas == ["delete_delta_5_5_0", "delta_5_5_0", "delete_delta_5_5_1",
                            "delta_5_5_1", "delta_5_5_2"]
    assert state.delete_deltas == ["delete_delta_5_5_0", "delete_delta_5_5_1"]
    make(part, "delta_5_5/bucket_0", "delete_delta_5_5/bucket_0")
    compacted = acid_state(part, reader(10), ALL_TXNS)
    assert compacted.deltas == ["delete_delta_5_5", "delta_5_5"]
    assert compacted.obsolete == sorted(statements)


# --- the partition root -----------------------------------------------------------------------


def test_hidden_names_are_ignored(part: Path) -> None:
    make(part, "_done", ".hive-staging_hive_1/-ext-10000/000000_0", "_tmp.delta_9_9/bucket_0",
         "_metadata_acid", "delta_1_1/bucket_0", "subdir/000000_0", "subdir/_SUCCESS",
         "subdir/.000000_0.crc", "subdir/_tmp/000001_0")
    state = acid_state(part, reader(10), ALL_TXNS)
    assert state.deltas == ["delta_1_1"]
    assert state.original_files == ["subdir/000000_0"]
    assert state.obsolete == []


def test_originals_become_obsolete_with_a_base(part: Path) -> None:
    make(part, "000000_0", "subdir/000001_0", "nested/deep/000002_0", "base_1/bucket_0")
    state = acid_state(part, reader(10), ALL_TXNS)
    assert state.base == "base_1"
    assert state.original_files == []
    assert state.original_file_sizes == {}
    assert state.obsolete == ["000000_0", "nested", "subdir"]


def test_originals_are_listed_recursively_in_path_order(part: Path) -> None:
    make(part, "b/000000_0", "a/z/000001_0", "a/000002_0", "a-b/000003_0", "000004_0",
         "delta_1_1/bucket_0")
    state = acid_state(part, reader(10), ALL_TXNS)
    assert state.original_files == sorted(["000004_0", "a-b/000003_0", "a/000002_0",
                                           "a/z/000001_0", "b/000000_0"])
    assert state.original_files[:3] == ["000004_0", "a-b/000003_0", "a/000002_0"]


def test_ignore_empty_files_drops_empty_originals(part: Path) -> None:
    make(part, "000000_0", "sub/000001_0")
    make(part, "000002_0", "sub/000003_0", size=0)
    assert acid_state(part, reader(10), ALL_TXNS).original_files == [
        "000000_0", "000002_0", "sub/000001_0", "sub/000003_0"]
    lean = acid_state(part, reader(10), ALL_TXNS, ignore_empty_files=True)
    assert lean.original_files == ["000000_0", "sub/000001_0"]


def test_a_file_with_an_acid_name_is_an_original(part: Path) -> None:
    make(part, "delta_1_1", "base_7")
    state = acid_state(part, reader(10), ALL_TXNS)
    assert state.original_files == ["base_7", "delta_1_1"]
    assert state.base is None


@pytest.mark.parametrize("name", ["delta_x_1", "base_abc", "delete_delta_1", "delta_1_2_3_4"])
def test_unparsable_acid_directory_names_raise_with_the_path(part: Path, name: str) -> None:
    make(part, f"{name}/bucket_0", "delta_1_1/bucket_0")
    with pytest.raises(InvalidLayoutError) as info:
        acid_state(part, reader(10), ALL_TXNS)
    assert info.value.path == f"{resolve(part)[1]}/{name}"


def test_unknown_metadata_version_is_refused(part: Path) -> None:
    make(part, "base_5/bucket_0")
    (part / "base_5" / "_metadata_acid").write_text('{"thisFileVersion":"7"}')
    with pytest.raises(InvalidLayoutError) as info:
        acid_state(part, reader(10), ALL_TXNS)
    assert info.value.path == f"{resolve(part)[1]}/base_5/_metadata_acid"


def test_missing_partition_reads_as_empty(tmp_path: Path) -> None:
    state = acid_state(tmp_path / "nope", reader(10), ALL_TXNS)
    assert (state.base, state.deltas, state.original_files) == (None, [], [])


# --- inputs and the pure core -----------------------------------------------------------------


def test_snapshots_may_be_objects_or_hive_strings(part: Path) -> None:
    make(part, "delta_1_1/bucket_0", "delta_2_2/bucket_0", "base_0000002_v0000009/bucket_0")
    as_text = acid_state(part, "tbl:2:9223372036854775807::", "100:9:9:")
    as_objects = acid_state(part, ValidWriteIdList("tbl", 2), ValidTxnList(100, (9,)))
    assert as_text == as_objects
    assert as_text.deltas == ["delta_1_1", "delta_2_2"]
    assert acid_state(str(part), None).base == "base_0000002_v0000009"  # None => all valid


def test_list_partition_reports_markers_and_original_dirs(part: Path) -> None:
    make(part, "base_5/bucket_0", "base_6/bucket_0", "base_0000007_v0000008/bucket_0",
         "sub/x/000000_0", "delta_1_1/bucket_0", "000001_0", "_hidden/000000_0")
    mark_compacted(part, "base_5")
    (part / "base_0000007_v0000008" / "_metadata_acid").write_text("not read: suffix decides")
    fs, path = resolve(part)
    listing = list_partition(fs, path)
    assert listing.path == path
    assert listing.compacted_bases == frozenset({"base_5"})
    assert listing.original_dir_files == {"sub": [("x/000000_0", 500)]}
    assert [e.name for e in listing.entries] == sorted(
        ["000001_0", "_hidden", "base_0000007_v0000008", "base_5", "base_6", "delta_1_1",
         "sub"])


def test_select_is_pure() -> None:
    listing = PartitionListing(
        entries=[Entry("delta_3_3", True, 0), Entry("base_2", True, 0),
                 Entry("000000_0", False, 9), Entry("orig", True, 0)],
        compacted_bases=frozenset({"base_2"}),
        original_dir_files={"orig": [("000001_0", 4)]},
    )
    state = select(listing, ValidWriteIdList("t", 3), None)
    assert isinstance(state, AcidState)
    assert state.base == "base_2" and state.base_is_compacted
    assert state.deltas == ["delta_3_3"]
    assert state.obsolete == ["000000_0", "orig"]
    no_base = select(PartitionListing(entries=listing.entries, original_dir_files={
        "orig": [("000001_0", 4)]}), ValidWriteIdList("t", 1), None)
    # base_2 is an IOW base of a write id above the watermark: invisible, so originals count
    assert no_base.original_files == ["000000_0", "orig/000001_0"]
    assert no_base.original_file_sizes == {"000000_0": 9, "orig/000001_0": 4}


# --- properties -------------------------------------------------------------------------------

_delta_names = st.builds(
    lambda low, span, stmt, delete: ParsedDelta(low, low + span, stmt, 0, delete).name,
    st.integers(1, 12), st.integers(0, 4), st.sampled_from([-1, 0, 1]), st.booleans())
_base_names = st.builds(lambda w, v: ParsedBase(w, v).name, st.integers(1, 15),
                        st.sampled_from([0, 0, 30, 31]))


@given(names=st.sets(st.one_of(_delta_names, _base_names), max_size=12),
       hwm=st.integers(0, 16), open_ids=st.sets(st.integers(1, 16), max_size=3),
       aborted=st.sets(st.integers(1, 16), max_size=3), txn_state=st.sampled_from(
           ["committed", "open", "aborted"]))
def test_every_directory_lands_in_at_most_one_bucket(
        names: set[str], hwm: int, open_ids: set[int], aborted: set[int],
        txn_state: str) -> None:
    aborted -= open_ids
    write_ids = ValidWriteIdList("t", hwm, tuple(w for w in open_ids if w <= hwm),
                                 tuple(w for w in aborted if w <= hwm))
    txns = {"committed": ValidTxnList(100), "open": ValidTxnList(100, (30, 31)),
            "aborted": ValidTxnList(100, (), (30, 31))}[txn_state]
    listing = PartitionListing(entries=[Entry(n, True, 0) for n in names])
    try:
        state = select(listing, write_ids, txns)
    except NotEnoughHistoryError:
        return
    groups = [[state.base] if state.base else [], state.deltas, state.obsolete, state.aborted]
    seen = [name for group in groups for name in group]
    assert len(seen) == len(set(seen))
    assert set(seen) <= names
    # every write id a kept delta adds above the base is committed for this snapshot
    floor = 0 if state.base_info is None else state.base_info.write_id
    for name in state.deltas:
        delta = state.delta_info[name]
        assert any(write_ids.is_write_id_valid(w)
                   for w in range(max(delta.min_write_id, 1), delta.max_write_id + 1)) or (
            delta.max_write_id <= floor)
    # the read order is spec 7.5's order
    keys = [(state.delta_info[n].sort_key, n) for n in state.deltas]
    assert keys == sorted(keys)


def test_a_streaming_delta_and_its_compacted_copy_are_not_twins(part: Path) -> None:
    """Hive's streaming writes ``delta_x_y`` (no statement id) for a batch of transactions; a
    minor compaction copies it to ``delta_x_y_v<T>``. Same min, max and statement id, but
    Hive's getAcidState (Hive 4) keeps a twin only with the same visibility txn too, so the
    walk keeps one of them and marks the other obsolete; keeping both read every row twice
    until the cleaner ran. (Derived: AcidUtils' twin rule with its visibilityTxnId check.)"""
    make(part, "delta_0000003_0000005/bucket_0", "delete_delta_0000003_0000005/bucket_0",
         "delta_0000003_0000005_v0000009/bucket_0",
         "delete_delta_0000003_0000005_v0000009/bucket_0", size=0)
    state = acid_state(part, reader(100), ALL_TXNS)
    assert state.deltas == ["delete_delta_0000003_0000005", "delta_0000003_0000005"]
    assert state.delete_deltas == ["delete_delta_0000003_0000005"]
    assert state.obsolete == ["delete_delta_0000003_0000005_v0000009",
                              "delta_0000003_0000005_v0000009"]
    # the originals gone (the cleaner ran): the compacted pair is read, still as twins
    for name in ("delta_0000003_0000005", "delete_delta_0000003_0000005"):
        for child in (part / name).iterdir():
            child.unlink()
        (part / name).rmdir()
    state = acid_state(part, reader(100), ALL_TXNS)
    assert state.deltas == ["delete_delta_0000003_0000005_v0000009",
                            "delta_0000003_0000005_v0000009"]
    assert state.delete_deltas == ["delete_delta_0000003_0000005_v0000009"]
    assert state.obsolete == []
