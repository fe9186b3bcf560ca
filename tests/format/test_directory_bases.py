"""Directory selection (spec section 7): which base a snapshot reads. Hive's testBestBase,
compacted against INSERT OVERWRITE bases, and visibility suffixes, rebuilt as real directories
(see test_directory.py for the delta and original-file cases)."""

from __future__ import annotations

from pathlib import Path

import pytest
from directory_support import ALL_TXNS, LONG_MAX, make, mark_compacted, reader

from acidstore.errors import NotEnoughHistoryError
from acidstore.format.directory import acid_state
from acidstore.format.layout import ParsedBase
from acidstore.io.fs import resolve


@pytest.fixture
def part(tmp_path: Path) -> Path:
    return tmp_path / "tbl" / "part1"


# --- TestAcidUtils#testBestBase (Hive 2.x test, re-derived for Hive 4 write-id semantics) -----
# Hive 4 tells a compacted base (history erased) from an INSERT OVERWRITE base (a delta of its
# own write id); the legacy test predates that, so each case runs with both kinds of base.

BASE_KINDS = ["compacted", "insert_overwrite"]


def best_base_partition(part: Path, kind: str) -> Path:
    bases = ["base_5", "base_10", "base_25", "base_100", "base_200"]
    make(part, *(f"{b}/bucket_0" for b in bases), "delta_98_100/bucket_0",
         "delta_120_130/bucket_0")
    if kind == "compacted":
        mark_compacted(part, *bases)
    return part


@pytest.mark.parametrize("kind", BASE_KINDS)
def test_best_base_picks_newest_usable_base(part: Path, kind: str) -> None:
    best_base_partition(part, kind)
    state = acid_state(part, reader(150), ALL_TXNS)
    assert state.base == "base_100"
    assert state.base_is_compacted is (kind == "compacted")
    assert state.deltas == ["delta_120_130"]
    assert state.obsolete == ["base_10", "base_25", "base_5", "delta_98_100"]  # not base_200
    assert state.original_files == []


@pytest.mark.parametrize("kind", BASE_KINDS)
def test_best_base_with_low_watermark(part: Path, kind: str) -> None:
    best_base_partition(part, kind)
    state = acid_state(part, reader(10), ALL_TXNS)
    assert state.base == "base_10"
    assert state.deltas == []
    assert state.obsolete == ["base_5"]


@pytest.mark.parametrize("kind", BASE_KINDS)
def test_best_base_with_open_and_aborted_ids(part: Path, kind: str) -> None:
    # 121 open (min open), 99 aborted: base_100 is still good
    best_base_partition(part, kind)
    state = acid_state(part, "tbl:150:121:121:99", ALL_TXNS)
    assert state.base == "base_100"
    assert state.deltas == ["delta_120_130"]
    assert state.obsolete == ["base_10", "base_25", "base_5", "delta_98_100"]
    assert state.has_uncompacted_aborts  # delta_98_100 holds aborted write 99


def test_best_base_open_id_below_every_compacted_base_is_not_enough_history(part: Path) -> None:
    best_base_partition(part, "compacted")
    with pytest.raises(NotEnoughHistoryError) as info:
        acid_state(part, "tbl:125:4:4:", ALL_TXNS)
    where = resolve(part)[1]
    assert str(info.value).startswith(f"cannot read {where} as of this snapshot")
    assert str(info.value).endswith(
        f"Hive: Not enough history available for (125,4).  Oldest available base: "
        f"{where}/base_5")


def test_best_base_open_id_below_insert_overwrite_bases_is_fine(part: Path) -> None:
    # IOW bases keep history: each is visible iff its own write id is committed
    best_base_partition(part, "insert_overwrite")
    state = acid_state(part, "tbl:125:4:4:", ALL_TXNS)
    assert state.base == "base_100"


@pytest.mark.parametrize("kind", BASE_KINDS)
def test_legacy_open_id_equal_to_oldest_base(part: Path, kind: str) -> None:
    # Hive 2.x expected "Not enough history ... (125,5)" here. Hive 4 accepts a base whose id is
    # <= the min open write id before looking at its kind (spec 7.2), so base_5 is usable:
    # for compacted bases it is the answer; IOW bases 10..100 are committed and newer.
    best_base_partition(part, kind)
    state = acid_state(part, "tbl:125:5:5:", ALL_TXNS)
    assert state.base == ("base_5" if kind == "compacted" else "base_100")


@pytest.mark.parametrize(
    "deltas", [["delta_1_10", "delta_12_25"], ["delta_2_10"]], ids=["two_deltas", "one_delta"])
def test_best_base_not_enough_history_names_oldest_base(part: Path, deltas: list[str]) -> None:
    make(part, *(f"{d}/bucket_0" for d in deltas), "base_25/bucket_0", "base_100/bucket_0")
    mark_compacted(part, "base_25", "base_100")
    with pytest.raises(NotEnoughHistoryError) as info:
        acid_state(part, "tbl:150:7:7:", ALL_TXNS)
    where = resolve(part)[1]
    assert str(info.value).endswith(
        f"Hive: Not enough history available for (150,7).  Oldest available base: "
        f"{where}/base_25")


def test_not_enough_history_prints_the_first_exception(part: Path) -> None:
    make(part, "base_0000010_v0000020/bucket_0")
    with pytest.raises(NotEnoughHistoryError, match=r"\(30,3\)\.  Oldest available base: .*"
                                                    r"/base_0000010_v0000020$"):
        acid_state(part, "tbl:30:3:3,12:", ALL_TXNS)


def test_best_base_after_non_acid_conversion(part: Path) -> None:
    make(part, f"base_{-(2**63)}/bucket_0", "delta_1_1/bucket_0", "base_100/bucket_0")
    mark_compacted(part, "base_100")
    state = acid_state(part, reader(1), ALL_TXNS)
    assert state.base == f"base_{-(2**63)}"
    assert state.deltas == ["delta_1_1"]
    assert state.obsolete == []


# --- compacted vs INSERT OVERWRITE bases (derived from AcidUtils#processBaseDir) --------------


def test_compactor_base_beats_insert_overwrite_base_of_same_write_id(part: Path) -> None:
    make(part, "base_0000010/bucket_0", "base_0000010_v0000020/bucket_0", "delta_11_11/bucket_0")
    state = acid_state(part, reader(20), ALL_TXNS)
    assert state.base == "base_0000010_v0000020"
    assert state.base_is_compacted
    assert state.base_info == ParsedBase(10, 20)
    assert state.obsolete == ["base_0000010"]
    assert state.deltas == ["delta_11_11"]


def test_insert_overwrite_base_never_replaces_compacted_base_of_same_id(part: Path) -> None:
    # listed compacted-first this time (names sort that way): the IOW twin becomes obsolete
    make(part, "base_010/bucket_0", "base_10/bucket_0")
    mark_compacted(part, "base_010")
    state = acid_state(part, reader(20), ALL_TXNS)
    assert state.base == "base_010"
    assert state.obsolete == ["base_10"]


def test_aborted_insert_overwrite_base_is_aborted(part: Path) -> None:
    make(part, "delta_1_10/bucket_0", "base_0000020/bucket_0", "delta_21_30/bucket_0")
    state = acid_state(part, "tbl:30:9223372036854775807::20", ALL_TXNS)
    assert state.base is None
    assert state.aborted == ["base_0000020"]
    assert state.aborted_write_ids == frozenset({20})
    assert state.deltas == ["delta_1_10", "delta_21_30"]


def test_compacted_base_with_aborted_write_id_is_not_an_aborted_dir(part: Path) -> None:
    make(part, "delta_1_10/bucket_0", "base_0000020_v0000025/bucket_0")
    state = acid_state(part, "tbl:30:9223372036854775807::20", ALL_TXNS)
    assert state.base == "base_0000020_v0000025"
    assert state.aborted == []
    assert state.obsolete == ["delta_1_10"]


def test_an_open_insert_overwrite_base_is_not_read(part: Path) -> None:
    # spec 7.2 "derived_open_iow_base_quirk": in Hive, base N with N == min open write id
    # passes the inclusive check, and the IOW's EXCLUSIVE lock keeps readers away. acidstore's
    # writers take no such lock, so the base of the running overwrite must not be selected
    # (it was: readers saw an uncommitted overwrite).
    make(part, "delta_1_4/bucket_0", "base_0000005/bucket_0")
    state = acid_state(part, "tbl:10:5:5:", ALL_TXNS)
    assert state.base is None
    assert state.deltas == ["delta_1_4"]
    assert state.obsolete == []


def test_open_write_inside_newer_iow_base_hides_it(part: Path) -> None:
    make(part, "delta_1_4/bucket_0", "base_0000007/bucket_0")
    state = acid_state(part, "tbl:10:5:5,7:", ALL_TXNS)
    assert state.base is None
    assert state.deltas == ["delta_1_4"]
    assert state.obsolete == []


# --- visibility suffixes (derived from AcidUtils#isDirUsable) ---------------------------------


def compactor_output_partition(part: Path) -> Path:
    return make(part, "delta_1_5/bucket_0", "delta_6_10/bucket_0",
                "base_0000010_v0000020/bucket_0")


@pytest.mark.parametrize(
    ("txns", "base", "deltas", "aborted"),
    [
        ("100:20:20:", None, ["delta_1_5", "delta_6_10"], []),
        (f"100:{LONG_MAX}::20", None, ["delta_1_5", "delta_6_10"], ["base_0000010_v0000020"]),
        (f"100:{LONG_MAX}::", "base_0000010_v0000020", [], []),
        ("19:19::", None, ["delta_1_5", "delta_6_10"], []),  # txn 20 not started for us
        (None, "base_0000010_v0000020", [], []),
    ],
    ids=["open", "aborted", "committed", "above_txn_hwm", "no_txn_list"],
)
def test_base_visibility_gate(part: Path, txns: str | None, base: str | None,
                              deltas: list[str], aborted: list[str]) -> None:
    compactor_output_partition(part)
    state = acid_state(part, reader(10), txns)
    assert state.base == base
    assert state.deltas == deltas
    assert state.aborted == aborted
    assert state.aborted_write_ids == frozenset()
    assert state.obsolete == ([] if base is None else ["delta_1_5", "delta_6_10"])


def test_minor_compaction_output_is_invisible_until_committed(part: Path) -> None:
    make(part, "delta_1_1_0/bucket_0", "delete_delta_2_2_0/bucket_0", "delta_3_3_0/bucket_0",
         "delta_0000001_0000003_v0000030/bucket_0",
         "delete_delta_0000001_0000003_v0000030/bucket_0")
    running = acid_state(part, reader(3), "100:30:30:")
    assert running.deltas == ["delta_1_1_0", "delete_delta_2_2_0", "delta_3_3_0"]
    assert running.obsolete == []
    done = acid_state(part, reader(3), f"100:{LONG_MAX}::")
    assert done.deltas == ["delete_delta_0000001_0000003_v0000030",
                           "delta_0000001_0000003_v0000030"]
    assert done.delete_deltas == ["delete_delta_0000001_0000003_v0000030"]
    assert done.obsolete == ["delete_delta_2_2_0", "delta_1_1_0", "delta_3_3_0"]
    failed = acid_state(part, reader(3), f"100:{LONG_MAX}::30")
    assert failed.deltas == running.deltas
    assert failed.aborted == ["delete_delta_0000001_0000003_v0000030",
                              "delta_0000001_0000003_v0000030"]


def test_visibility_txn_zero_is_always_visible(part: Path) -> None:
    make(part, "base_0000005_v0000000/bucket_0")
    state = acid_state(part, reader(10), "0:0:1:")
    assert state.base == "base_0000005_v0000000"
    assert not state.base_is_compacted  # _v0 is the same as no suffix


def test_no_enough_history_ignores_invisible_bases(part: Path) -> None:
    # the only base is compactor output of an open txn: it never counts as "oldest"
    make(part, "delta_1_10/bucket_0", "base_0000010_v0000020/bucket_0")
    state = acid_state(part, "tbl:10:5:5:", "100:20:20:")
    assert state.base is None
    assert state.deltas == ["delta_1_10"]


