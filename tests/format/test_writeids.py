"""Write-id and transaction snapshots: Hive's string forms and answers (spec 6.2-6.4).

The fixed cases transcribe facts from Hive's TestValidReaderWriteIdList,
TestValidCompactorWriteIdList and TestValidReadTxnList (storage-api) and from the spec; the
property tests check round trips and compare the range answers with a brute-force model.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acidstore.errors import InvalidInputError
from acidstore.format.writeids import (
    LONG_MAX,
    RangeResponse,
    ValidCompactorWriteIdList,
    ValidTxnList,
    ValidTxnWriteIdList,
    ValidWriteIdList,
)

MAX = str(LONG_MAX)
ALL, SOME, NONE = RangeResponse.ALL, RangeResponse.SOME, RangeResponse.NONE


# --- string form (spec 6.2, TestValidReaderWriteIdList) ---------------------------------------


def test_no_exceptions_prints_two_trailing_colons() -> None:
    wl = ValidWriteIdList("default.t1", 1)
    assert str(wl) == f"default.t1:1:{MAX}::"
    back = ValidWriteIdList.parse(str(wl))
    assert back.is_write_id_valid(1)
    assert not back.is_write_id_valid(2)


def test_spec_example_round_trips_exactly() -> None:
    text = f"default.t:10:{MAX}::"
    wl = ValidWriteIdList.parse(text)
    assert (wl.table_name, wl.high_watermark, wl.exceptions) == ("default.t", 10, ())
    assert wl.min_open_write_id is None
    assert str(wl) == text


def test_open_exceptions() -> None:
    wl = ValidWriteIdList("default.t1", 5, open_write_ids=(2, 4), min_open_write_id=4)
    assert str(wl) == "default.t1:5:4:2,4:"
    back = ValidWriteIdList.parse(str(wl))
    assert back == wl
    assert [back.is_write_id_valid(w) for w in range(1, 7)] == [
        True, False, True, False, True, False,
    ]


def test_aborted_and_open_exceptions_print_in_their_own_fields() -> None:
    wl = ValidWriteIdList("default.t1", 11, (4, 6, 10), (2, 8), 4)
    assert str(wl) == "default.t1:11:4:4,6,10:2,8"
    assert [wl.is_write_id_aborted(w) for w in (2, 4, 6, 8, 10)] == [
        True, False, False, True, False,
    ]
    assert ValidWriteIdList.parse(str(wl)) == wl


def test_long_list_is_not_compressed_and_round_trips() -> None:
    # Unlike the txn list, Hive's write id list never prints a-b runs.
    wl = ValidWriteIdList("default.t1", 2000, tuple(range(100, 1100)), (), 900)
    text = str(wl)
    assert "-" not in text
    assert text.startswith("default.t1:2000:900:100,101,102,")
    back = ValidWriteIdList.parse(text)
    assert all(back.is_write_id_valid(w) for w in range(100))
    assert not any(back.is_write_id_valid(w) for w in range(100, 1100))
    assert all(back.is_write_id_valid(w) for w in range(1100, 2001))
    assert not back.is_write_id_valid(2001)


def test_four_fields_means_open_ids_only() -> None:
    wl = ValidWriteIdList.parse("tbl:100:4:4")
    assert wl.high_watermark == 100
    assert wl.min_open_write_id == 4
    assert wl.open_write_ids == (4,)
    assert wl.aborted_write_ids == ()
    assert wl.is_write_id_open(4)
    assert not wl.is_write_id_aborted(4)
    assert str(wl) == "tbl:100:4:4:"  # Hive's writer always emits both separators


def test_fewer_than_four_fields_means_no_exceptions() -> None:
    wl = ValidWriteIdList.parse("tbl:7:3")
    assert wl.exceptions == ()
    assert wl.min_open_write_id == 3  # kept as written, like Hive's readFromString
    assert str(wl) == "tbl:7:3::"


def test_five_fields_with_empty_open_field() -> None:
    wl = ValidWriteIdList.parse(f"db.t:11:{MAX}::5,6")
    assert wl.open_write_ids == ()
    assert wl.aborted_write_ids == (5, 6)
    assert wl.min_open_write_id is None


def test_trailing_empty_fields_are_dropped_like_java_split() -> None:
    wl = ValidWriteIdList.parse("db.t:5:4:2,4,:")
    assert wl.open_write_ids == (2, 4)


def test_unsorted_ids_are_sorted_and_merged() -> None:
    wl = ValidWriteIdList.parse("db.t:20:7:9,7:5,3")
    assert wl.open_write_ids == (7, 9)
    assert wl.aborted_write_ids == (3, 5)
    assert wl.exceptions == (3, 5, 7, 9)
    assert wl.invalid_write_ids == frozenset({3, 5, 7, 9})
    assert str(wl) == "db.t:20:7:7,9:3,5"


@pytest.mark.parametrize("text", [None, ""])
def test_empty_string_means_everything_valid(text: str | None) -> None:
    wl = ValidWriteIdList.parse(text)
    assert wl == ValidWriteIdList.all_valid()
    assert wl.high_watermark == LONG_MAX
    assert wl.table_name is None
    assert wl.is_write_id_valid(10**18)
    assert wl.is_write_id_range_valid(1, 10**6) is ALL
    assert str(wl) == f"null:{MAX}:{MAX}::"


@pytest.mark.parametrize("spelling", ["null", "NULL", "Null"])
def test_null_table_name(spelling: str) -> None:
    wl = ValidWriteIdList.parse(f"{spelling}:5:{MAX}::")
    assert wl.table_name is None
    assert str(wl) == f"null:5:{MAX}::"
    assert str(ValidWriteIdList(None, 5)) == f"null:5:{MAX}::"


def test_table_name_is_lower_cased() -> None:
    assert ValidWriteIdList("Default.Events", 1).table_name == "default.events"


def test_min_open_is_derived_from_open_ids() -> None:
    assert ValidWriteIdList("t", 10, (7, 5)).min_open_write_id == 5
    assert ValidWriteIdList("t", 10, (), (3,)).min_open_write_id is None


def test_explicit_long_max_min_open_means_unset() -> None:
    wl = ValidWriteIdList.parse(f"t:10:{MAX}:5:")
    assert wl.min_open_write_id is None
    assert str(wl) == f"t:10:{MAX}:5:"
    assert ValidWriteIdList.parse(str(wl)) == wl


@pytest.mark.parametrize(
    "text",
    [
        "t:abc:1::",
        "t:5",
        "t",
        "t:5:1:2:3:4",
        "t: 5:1::",
        "t:5:1:2,,3:",
        "t:5:1:2_0:",
        "t:99999999999999999999:1::",
        "t:10:3:3:3",  # open and aborted at once
        "t:10:3:3,3:",  # listed twice
        "t:10:3:4-6:",  # ranges only exist in txn lists
    ],
)
def test_malformed_strings_raise_invalid_input(text: str) -> None:
    with pytest.raises(InvalidInputError):
        ValidWriteIdList.parse(text)


def test_bad_constructor_arguments_raise_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match="cannot contain"):
        ValidWriteIdList("db:t", 1)
    with pytest.raises(InvalidInputError, match="64-bit"):
        ValidWriteIdList("t", 2**63)
    with pytest.raises(InvalidInputError, match="int"):
        ValidWriteIdList("t", 5, ("3",))  # type: ignore[arg-type]


# --- reader semantics (spec 6.3) ---------------------------------------------------------------


def test_is_valid_base_is_strictly_below_min_open() -> None:
    wl = ValidWriteIdList("t", 10, (5,), (3,))
    assert wl.is_valid_base(4)
    assert not wl.is_valid_base(5)
    assert not wl.is_valid_base(6)
    # The watermark bounds it too, and an aborted id does not block a base.
    no_open = ValidWriteIdList("t", 10, (), (3,))
    assert no_open.is_valid_base(10)
    assert not no_open.is_valid_base(11)


@pytest.mark.parametrize(
    ("hwm", "open_ids", "aborted", "low", "high", "expected"),
    [
        (100, (), (), 50, 105, SOME),  # straddles hwm with no exceptions
        (100, (), (), 101, 105, NONE),  # starts above hwm
        (100, (), (), 1, 100, ALL),
        (100, (60,), (), 1, 50, ALL),  # first exception above the range
        (100, (60,), (), 60, 60, NONE),
        (100, (60,), (), 55, 65, SOME),
        (100, (60, 61), (62,), 60, 62, NONE),
        (100, (60,), (), 90, 110, SOME),
        (100, (99,), (100,), 99, 110, NONE),  # exceptions plus the part above hwm
    ],
)
def test_range_validity(
    hwm: int, open_ids: tuple[int, ...], aborted: tuple[int, ...],
    low: int, high: int, expected: RangeResponse,
) -> None:
    wl = ValidWriteIdList("t", hwm, open_ids, aborted)
    assert wl.is_write_id_range_valid(low, high) is expected


def test_range_validity_keeps_hives_shortcut_for_exceptions_above_hwm() -> None:
    # Hive answers ALL when the first exception lies above the range, without looking at the
    # watermark; the metastore never lists exceptions above it, so this only pins the quirk.
    wl = ValidWriteIdList("t", 10, (20,))
    assert wl.is_write_id_range_valid(5, 15) is ALL
    assert ValidWriteIdList("t", 10).is_write_id_range_valid(5, 15) is SOME


def test_range_aborted() -> None:
    # Facts from TestValidCompactorWriteIdList#testAbortedRange; the reader list agrees.
    for cls in (ValidWriteIdList, ValidCompactorWriteIdList):
        wl = cls.parse("default.t1:11:4::5,6,7,8")
        assert wl.is_write_id_range_aborted(1, 3) is NONE
        assert wl.is_write_id_range_aborted(9, 10) is NONE
        assert wl.is_write_id_range_aborted(6, 7) is ALL
        assert wl.is_write_id_range_aborted(4, 6) is SOME
        assert wl.is_write_id_range_aborted(6, 13) is SOME


def test_range_aborted_is_none_above_hwm() -> None:
    wl = ValidWriteIdList("t", 5, (), (7, 8))
    assert wl.is_write_id_range_aborted(7, 8) is NONE
    assert wl.is_write_id_aborted(7)


def test_open_ids_are_not_aborted_for_the_reader() -> None:
    wl = ValidWriteIdList("t", 10, (4,), (3,))
    assert wl.is_write_id_open(4) and not wl.is_write_id_aborted(4)
    assert wl.is_write_id_aborted(3) and not wl.is_write_id_open(3)
    assert not wl.is_write_id_open(11)


# --- compactor list (spec 6.4, TestValidCompactorWriteIdList) ---------------------------------


@pytest.mark.parametrize(
    ("aborted", "hwm", "expected"),
    [
        ((3, 4), 2, NONE),  # minTxnHigh
        ((13, 14), 12, ALL),  # maxTxnLow
        ((), 5, NONE),  # minTxnHighNoExceptions
        ((), 15, ALL),  # maxTxnLowNoExceptions
        ((3, 6), 3, NONE),  # exceptionsAllBelow
        ((8,), 7, NONE),  # exceptionsInMidst
    ],
)
def test_compactor_range_7_9(aborted: tuple[int, ...], hwm: int, expected: RangeResponse) -> None:
    wl = ValidCompactorWriteIdList("default.t1", hwm, (), aborted)
    assert wl.is_write_id_range_valid(7, 9) is expected


def test_compactor_drops_exceptions_above_hwm() -> None:
    wl = ValidCompactorWriteIdList("default.t1", 15, (), (8, 11, 17, 29))
    assert wl.exceptions == (8, 11)
    assert wl.is_write_id_range_valid(7, 9) is ALL
    assert wl.is_write_id_range_valid(12, 16) is NONE


def test_compactor_range_ignores_exceptions_inside_it() -> None:
    # A reader would say SOME; the compactor may fold aborted ids (it skips their rows).
    wl = ValidCompactorWriteIdList("t", 20, (), (8,))
    assert wl.is_write_id_range_valid(1, 20) is ALL
    assert ValidWriteIdList("t", 20, (), (8,)).is_write_id_range_valid(1, 20) is SOME


def test_compactor_write_to_string() -> None:
    wl = ValidCompactorWriteIdList("default.t1", 8, (), (7, 9, 10, LONG_MAX))
    assert str(wl) == f"default.t1:8:{MAX}::7"
    assert str(ValidCompactorWriteIdList.all_valid()) == f"null:{MAX}:{MAX}::"
    assert str(ValidCompactorWriteIdList("default.t1", 23)) == f"default.t1:23:{MAX}::"


def test_compactor_read_from_string() -> None:
    wl = ValidCompactorWriteIdList.parse(f"default.t1:37:{MAX}::7,9,10")
    assert isinstance(wl, ValidCompactorWriteIdList)
    assert wl.table_name == "default.t1"
    assert wl.high_watermark == 37
    assert wl.min_open_write_id is None
    assert wl.exceptions == (7, 9, 10)
    wl = ValidCompactorWriteIdList.parse(f"default.t1:21:{MAX}:")
    assert (wl.high_watermark, wl.min_open_write_id, wl.exceptions) == (21, None, ())
    wl = ValidCompactorWriteIdList.parse("default.t1:5:4::1,2,3")
    assert (wl.high_watermark, wl.min_open_write_id, wl.exceptions) == (5, 4, (1, 2, 3))


def test_compactor_counts_every_exception_as_aborted() -> None:
    wl = ValidCompactorWriteIdList.parse("t:10:4:4:2")
    assert wl.is_write_id_aborted(4)
    assert not ValidWriteIdList.parse("t:10:4:4:2").is_write_id_aborted(4)


def test_to_compactor_rejects_min_open_at_long_min() -> None:
    with pytest.raises(InvalidInputError, match="64-bit"):
        ValidWriteIdList("t", 5, (-(2**63),)).to_compactor()


def test_open_id_at_long_max_reads_as_no_minimum() -> None:
    wl = ValidWriteIdList("t", 0, (LONG_MAX,))
    assert wl.min_open_write_id is None
    assert ValidWriteIdList.parse(str(wl)) == wl


def test_compactor_and_reader_lists_are_never_equal() -> None:
    assert ValidWriteIdList("t", 5) != ValidCompactorWriteIdList("t", 5)


@pytest.mark.parametrize(
    ("reader", "compactor"),
    [
        ("t:10:5:5,7:3", "t:4:5::3"),  # hwm = minOpen - 1, only aborted ids below it kept
        ("t:10:5:5:", f"t:4:{MAX}::"),  # no surviving exception: Hive leaves minOpen unset
        (f"t:10:{MAX}::3,8", f"t:10:{MAX}::3,8"),  # nothing open: reader hwm, all aborted
        ("t:20:9:9,12:4,10,15", "t:8:9::4"),  # aborted ids above the new hwm are dropped
        (f"t:10:{MAX}::", f"t:10:{MAX}::"),
    ],
)
def test_to_compactor(reader: str, compactor: str) -> None:
    result = ValidWriteIdList.parse(reader).to_compactor()
    assert isinstance(result, ValidCompactorWriteIdList)
    assert str(result) == compactor
    assert result.to_compactor() is result


# --- transaction lists (TestValidReadTxnList) -------------------------------------------------


def test_txn_list_no_exceptions() -> None:
    tl = ValidTxnList(1)
    assert str(tl) == f"1:{MAX}::"
    back = ValidTxnList.parse(str(tl))
    assert back.is_txn_valid(1)
    assert not back.is_txn_valid(2)


def test_txn_list_exceptions() -> None:
    tl = ValidTxnList(5, (2, 4), (), 4)
    assert str(tl) == "5:4:2,4:"
    back = ValidTxnList.parse(str(tl))
    assert [back.is_txn_valid(t) for t in range(1, 7)] == [True, False, True, False, True, False]


def test_txn_list_aborted() -> None:
    tl = ValidTxnList(11, (4, 6, 10), (2, 8), 4)
    assert str(tl) == "11:4:4,6,10:2,8"
    assert [tl.is_txn_aborted(t) for t in (2, 4, 6, 8, 10)] == [True, False, False, True, False]
    assert tl.is_txn_open(4) and not tl.is_txn_open(2)


def test_txn_list_compresses_runs_of_five_or_more() -> None:
    # Hive 4: 4..8 is a run of 5 -> "4-8"; 9 is aborted so it breaks the open run.
    tl = ValidTxnList(11, (4, 5, 6, 7, 8, 10), (2, 9), 4)
    assert str(tl) == "11:4:4-8,10:2,9"
    assert ValidTxnList.parse("11:4:4-8,10:2,9") == tl
    # A run of four stays spelled out.
    assert str(ValidTxnList(11, (4, 5, 6, 7))) == "11:4:4,5,6,7:"


def test_txn_list_long_run() -> None:
    tl = ValidTxnList(2000, tuple(range(100, 1100)), (), 900)
    assert str(tl) == "2000:900:100-1099:"
    back = ValidTxnList.parse(str(tl))
    assert back == tl
    assert all(back.is_txn_valid(t) for t in range(1, 100))
    assert not any(back.is_txn_valid(t) for t in range(100, 1100))
    assert back.is_txn_valid(2000) and not back.is_txn_valid(2001)


def test_txn_list_parses_uncompressed_older_form() -> None:
    assert ValidTxnList.parse("11:4:4,5,6,7,8,10:2,9") == ValidTxnList(
        11, (4, 5, 6, 7, 8, 10), (2, 9), 4
    )


def test_txn_zero_is_always_valid() -> None:
    assert ValidTxnList(5, (1,)).is_txn_valid(0)
    assert ValidTxnList(-1).is_txn_valid(0)
    with pytest.raises(InvalidInputError, match="positive"):
        ValidTxnList(5, (0,))


@pytest.mark.parametrize("text", [None, ""])
def test_empty_txn_list_means_everything_valid(text: str | None) -> None:
    tl = ValidTxnList.parse(text)
    assert tl == ValidTxnList.all_valid()
    assert tl.is_txn_valid(10**15)
    assert str(tl) == f"{MAX}:{MAX}::"


@pytest.mark.parametrize("text", ["5", "x:1::", "5:1:2:3:4", "5:1:2-3-4:", "5:1:-3:", "5:1:2:2"])
def test_malformed_txn_lists_raise_invalid_input(text: str) -> None:
    with pytest.raises(InvalidInputError):
        ValidTxnList.parse(text)


# --- per-transaction table lists --------------------------------------------------------------


def test_txn_write_id_list_round_trip_and_lookup() -> None:
    text = f"42$default.t:10:{MAX}::$default.u:3:2:2:"
    tw = ValidTxnWriteIdList.parse(text)
    assert tw.txn_id == 42
    assert str(tw) == text
    assert tw.table("default.u").open_write_ids == (2,)
    assert tw.table("Default.T").high_watermark == 10
    with pytest.raises(InvalidInputError, match=r"default\.v"):
        tw.table("default.v")


def test_txn_write_id_list_without_tables() -> None:
    tw = ValidTxnWriteIdList.parse("7")
    assert (tw.txn_id, tw.tables) == (7, ())
    assert str(tw) == "7"


def test_txn_write_id_list_errors() -> None:
    with pytest.raises(InvalidInputError):
        ValidTxnWriteIdList.parse("")
    with pytest.raises(InvalidInputError):
        ValidTxnWriteIdList.parse("x$t:1:2::")
    with pytest.raises(InvalidInputError, match="twice"):
        ValidTxnWriteIdList(1, (ValidWriteIdList("t", 1), ValidWriteIdList("t", 2)))


# --- properties -------------------------------------------------------------------------------

longs = st.integers(min_value=-(2**63), max_value=LONG_MAX)
# Long.MIN_VALUE as minimum open id has no compactor watermark below it (pinned separately).
ids_above_min = st.integers(min_value=-(2**63) + 1, max_value=LONG_MAX)
names = st.none() | st.from_regex(r"[a-z][a-z0-9_]{0,8}(\.[a-z][a-z0-9_]{0,8})?", fullmatch=True)


@st.composite
def write_id_lists(draw: st.DrawFn, *, hive_shaped: bool = False) -> ValidWriteIdList:
    """Any list, or (hive_shaped) one as the metastore builds it: exceptions <= hwm, minOpen =
    smallest open id."""
    if hive_shaped:
        hwm = draw(st.integers(min_value=0, max_value=60))
        ids = draw(st.sets(st.integers(min_value=1, max_value=hwm), max_size=20)) if hwm else set()
    else:
        hwm = draw(longs)
        ids = draw(st.sets(ids_above_min, max_size=20))
    flags = draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    ordered = sorted(ids)
    open_ids = tuple(w for w, aborted in zip(ordered, flags, strict=True) if not aborted)
    aborted_ids = tuple(w for w, aborted in zip(ordered, flags, strict=True) if aborted)
    min_open = None if hive_shaped else draw(st.none() | ids_above_min)
    return ValidWriteIdList(draw(names), hwm, open_ids, aborted_ids, min_open)


@given(write_id_lists())
def test_write_id_list_round_trips(wl: ValidWriteIdList) -> None:
    text = str(wl)
    assert ValidWriteIdList.parse(text) == wl
    assert str(ValidWriteIdList.parse(text)) == text


@given(write_id_lists())
def test_compactor_list_round_trips(wl: ValidWriteIdList) -> None:
    compactor = wl.to_compactor()
    assert ValidCompactorWriteIdList.parse(str(compactor)) == compactor
    direct = ValidCompactorWriteIdList(
        wl.table_name, wl.high_watermark, wl.open_write_ids, wl.aborted_write_ids,
        wl.min_open_write_id,
    )
    assert ValidCompactorWriteIdList.parse(str(direct)) == direct


def brute_force(flags: list[bool]) -> RangeResponse:
    if all(flags):
        return ALL
    return NONE if not any(flags) else SOME


@given(write_id_lists(hive_shaped=True), st.integers(-5, 70), st.integers(0, 30))
def test_range_answers_match_brute_force(wl: ValidWriteIdList, low: int, width: int) -> None:
    high = low + width
    ids = range(low, high + 1)
    for w in ids:
        expected = w <= wl.high_watermark and w not in wl.open_write_ids + wl.aborted_write_ids
        assert wl.is_write_id_valid(w) == expected
    assert wl.is_write_id_range_valid(low, high) is brute_force(
        [wl.is_write_id_valid(w) for w in ids]
    )
    assert wl.is_write_id_range_aborted(low, high) is brute_force(
        [wl.is_write_id_aborted(w) for w in ids]
    )


@given(write_id_lists(hive_shaped=True), st.integers(-5, 70), st.integers(0, 30))
def test_compactor_answers_match_model(wl: ValidWriteIdList, low: int, width: int) -> None:
    high = low + width
    compactor = wl.to_compactor()
    assert compactor.open_write_ids == ()
    assert set(compactor.aborted_write_ids) <= set(wl.aborted_write_ids)
    resolved = [w <= compactor.high_watermark for w in range(low, high + 1)]
    assert compactor.is_write_id_range_valid(low, high) is (ALL if all(resolved) else NONE)
    for w in range(low, high + 1):
        # The compactor never takes in a row a reader would not see, and below its watermark
        # it sees exactly what the reader sees.
        if compactor.is_write_id_valid(w):
            assert wl.is_write_id_valid(w)
        if w <= compactor.high_watermark:
            assert compactor.is_write_id_valid(w) == wl.is_write_id_valid(w)
            assert compactor.is_write_id_aborted(w) == wl.is_write_id_aborted(w)


@given(write_id_lists(hive_shaped=True))
def test_valid_base_model(wl: ValidWriteIdList) -> None:
    for w in range(-2, 65):
        no_open_up_to_w = all(o > w for o in wl.open_write_ids)
        assert wl.is_valid_base(w) == (no_open_up_to_w and w <= wl.high_watermark)


@st.composite
def txn_lists(draw: st.DrawFn) -> ValidTxnList:
    ids = sorted(draw(st.sets(st.integers(1, 80), max_size=40)))
    flags = draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    open_ids = tuple(t for t, aborted in zip(ids, flags, strict=True) if not aborted)
    aborted_ids = tuple(t for t, aborted in zip(ids, flags, strict=True) if aborted)
    hwm = draw(st.integers(0, 100) | st.just(LONG_MAX))
    return ValidTxnList(hwm, open_ids, aborted_ids, draw(st.none() | st.integers(1, 100)))


@given(txn_lists())
def test_txn_list_round_trips(tl: ValidTxnList) -> None:
    text = str(tl)
    assert ValidTxnList.parse(text) == tl
    assert str(ValidTxnList.parse(text)) == text
    for t in range(0, 101):
        expected = t == 0 or (t <= tl.high_watermark and t not in tl.exceptions)
        assert tl.is_txn_valid(t) == expected


@given(st.lists(st.integers(1, 60), min_size=5, unique=True))
def test_txn_runs_print_as_ranges(ids: list[int]) -> None:
    text = str(ValidTxnList(100, tuple(ids))).split(":")[2]
    for piece in text.split(","):
        if "-" in piece:
            low, high = map(int, piece.split("-"))
            assert high - low + 1 >= 5
    assert ValidTxnList.parse(f"100:{MAX}:{text}:").open_txn_ids == tuple(sorted(ids))


@given(longs, st.lists(write_id_lists(), max_size=4))
def test_txn_write_id_list_round_trips(txn: int, tables: list[ValidWriteIdList]) -> None:
    unique = {table.table_name: table for table in tables}
    tw = ValidTxnWriteIdList(txn, tuple(unique.values()))
    assert ValidTxnWriteIdList.parse(str(tw)) == tw
