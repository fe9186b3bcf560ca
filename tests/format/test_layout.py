"""Names of spec section 2: exact printing, Hive's lenient parsing, and round trips.

The literal expectations come from Hive's TestAcidUtils (testCreateFilename,
testCreateFilenameLargeIds, testParsing, testDeleteDeltaSubdirPathGeneration) and from the
directory names used throughout its getAcidState tests.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acidstore.errors import InvalidInputError, InvalidLayoutError
from acidstore.format import layout
from acidstore.format.layout import (
    BucketPathInfo,
    MetadataAcid,
    ParsedBase,
    ParsedBucketFile,
    ParsedDelta,
    ParsedOriginalFile,
)

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MAX = 2**31 - 1

longs = st.integers(LONG_MIN, LONG_MAX)
statement_ids = st.one_of(st.just(-1), st.integers(-(2**31), INT_MAX))


# --- constants --------------------------------------------------------------------------------


def test_constants_are_hives_literals() -> None:
    assert layout.BASE_PREFIX == "base_"
    assert layout.DELTA_PREFIX == "delta_"
    assert layout.DELETE_DELTA_PREFIX == "delete_delta_"
    assert layout.BUCKET_PREFIX == "bucket_"
    assert layout.VISIBILITY_PREFIX == "_v"
    assert layout.FLUSH_LENGTH_SUFFIX == "_flush_length"
    assert layout.ACID_VERSION_FILE == "_orc_acid_version"
    assert layout.ACID_VERSION == "2"
    assert layout.METADATA_FILE == "_metadata_acid"
    assert layout.MAX_STATEMENTS_PER_TXN == 10000


# --- printing (TestAcidUtils#testCreateFilename and friends) ----------------------------------


def test_create_filename_examples() -> None:
    # old-style (legacy) bucket files
    assert layout.original_file_name(1) == "000001_0"
    assert layout.original_file_name(123) == "000123_0"
    bucket = layout.bucket_file_name(23)
    assert bucket == "bucket_00023"
    # base written with max write id 200
    assert f"{layout.base_name(200)}/{bucket}" == "base_0000200/bucket_00023"
    # deltas 100..200, statement 0 (the writer default)
    assert layout.delta_name(100, 200, 0) == "delta_0000100_0000200_0000"
    assert layout.delta_name(100, 200, 0, delete=True) == "delete_delta_0000100_0000200_0000"
    # statement -1 prints no statement part
    assert layout.delta_name(100, 200, -1) == "delta_0000100_0000200"
    assert layout.delta_name(100, 200) == "delta_0000100_0000200"
    assert layout.delta_name(100, 200, -1, delete=True) == "delete_delta_0000100_0000200"
    assert layout.delta_name(100, 200, 7) == "delta_0000100_0000200_0007"
    assert layout.delta_name(100, 200, 7, delete=True) == "delete_delta_0000100_0000200_0007"


def test_create_filename_large_ids_are_not_truncated() -> None:
    assert layout.original_file_name(123456789) == "123456789_0"
    assert layout.base_name(1234567890) == "base_1234567890"
    assert layout.delta_name(1234567880, 1234567890, 0) == "delta_1234567880_1234567890_0000"


def test_delete_delta_subdir_generation() -> None:
    assert layout.delta_name(1, 10, delete=True) == "delete_delta_0000001_0000010"
    assert layout.delta_name(1, 10, 5, delete=True) == "delete_delta_0000001_0000010_0005"


def test_visibility_suffix_is_omitted_for_txn_zero() -> None:
    assert layout.base_name(5, 0) == "base_0000005"
    assert layout.base_name(5, 10) == "base_0000005_v0000010"
    assert layout.delta_name(1, 3, -1, 28) == "delta_0000001_0000003_v0000028"
    assert layout.delta_name(21, 27, -1, 28, delete=True) == "delete_delta_0000021_0000027_v0000028"
    assert layout.delta_name(4, 4, 2, 9) == "delta_0000004_0000004_0002_v0000009"
    assert ParsedBase(5, 10).name == "base_0000005_v0000010"
    assert ParsedDelta(1, 3, visibility_txn_id=28).name == "delta_0000001_0000003_v0000028"


def test_bucket_files_and_side_files() -> None:
    assert ParsedBucketFile(1).name == "bucket_00001"
    assert ParsedBucketFile(1, 3).name == "bucket_00001_3"
    assert layout.flush_length_file("bucket_00001") == "bucket_00001_flush_length"
    assert layout.is_flush_length_file("bucket_00001_flush_length")
    assert not layout.is_flush_length_file("bucket_00001")
    assert layout.parse_flush_length_file("bucket_00007_flush_length") == ParsedBucketFile(7)
    with pytest.raises(InvalidLayoutError):
        layout.flush_length_file("000001_0")
    with pytest.raises(InvalidLayoutError):
        layout.parse_flush_length_file("bucket_00001")


# --- parsing ----------------------------------------------------------------------------------


def test_parse_base_as_in_testparsing() -> None:
    base = ParsedBase.parse("base_000123")
    assert base.write_id == 123
    assert base.visibility_txn_id == 0
    assert ParsedBase.parse("base_0000005_v0000010") == ParsedBase(5, 10)
    assert ParsedBase.parse("base_0000027_v0000028") == ParsedBase(27, 28)


def test_parse_base_negative_and_large_write_ids() -> None:
    # the first compaction after a non-ACID -> ACID conversion writes base_<Long.MIN_VALUE>
    assert ParsedBase.parse("base_-9223372036854775808") == ParsedBase(LONG_MIN)
    assert ParsedBase(LONG_MIN).name == "base_-9223372036854775808"
    assert ParsedBase.parse("base_1234567890").write_id == 1234567890


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # unpadded and oddly padded names from TestAcidUtils#testOverlapingDelta(2)
        ("delta_0000063_63", ParsedDelta(63, 63)),
        ("delta_000062_62", ParsedDelta(62, 62)),
        ("delta_00061_61", ParsedDelta(61, 61)),
        ("delta_40_60", ParsedDelta(40, 60)),
        ("delta_0060_60", ParsedDelta(60, 60)),
        ("delta_052_55", ParsedDelta(52, 55)),
        ("delta_0000063_63_0", ParsedDelta(63, 63, 0)),
        ("delta_000062_62_3", ParsedDelta(62, 62, 3)),
        ("delta_0060_60_7", ParsedDelta(60, 60, 7)),
        ("delta_101_101_1", ParsedDelta(101, 101, 1)),
        ("delete_delta_00064_64", ParsedDelta(64, 64, delete=True)),
        ("delete_delta_000005_000006", ParsedDelta(5, 6, delete=True)),
        ("delta_1234567880_1234567890_0000", ParsedDelta(1234567880, 1234567890, 0)),
        ("delta_0000021_0000027_v0000028", ParsedDelta(21, 27, -1, 28)),
        ("delete_delta_0000021_0000027_v0000028", ParsedDelta(21, 27, -1, 28, True)),
        ("delta_0000004_0000004_0002_v0000009", ParsedDelta(4, 4, 2, 9)),
    ],
)
def test_parse_delta_leniently(name: str, expected: ParsedDelta) -> None:
    parsed = ParsedDelta.parse(name)
    assert parsed == expected
    assert layout.parse_directory(name) == expected


def test_parsed_delta_accessors() -> None:
    plain = ParsedDelta.parse("delta_40_60")
    assert plain.prefix == "delta_"
    assert not plain.has_statement_id
    assert plain.statement_id == -1
    stmt = ParsedDelta.parse("delete_delta_1_1_0")
    assert stmt.prefix == "delete_delta_"
    assert stmt.has_statement_id
    assert stmt.delete


def test_delta_sort_key_is_spec_7_5_order() -> None:
    names = ["delta_11_20", "delta_5_10", "delta_5_20", "delta_5_20_0", "delta_5_20_3",
             "delete_delta_1_1", "delta_1_1_0"]
    ordered = sorted(names, key=lambda n: (ParsedDelta.parse(n).sort_key, n))
    # wider first at equal min; no statement (-1) before statements; path breaks ties
    assert ordered == ["delete_delta_1_1", "delta_1_1_0", "delta_5_20", "delta_5_20_0",
                       "delta_5_20_3", "delta_5_10", "delta_11_20"]


@pytest.mark.parametrize(
    "name",
    [
        "base_", "base_x", "base_5_6", "base_5_v", "base_5_vx", "base_ 5", "base_٣",
        "base_9223372036854775808", "base_5_v9223372036854775808",
        "delta_", "delta_5", "delta_5_", "delta__5", "delta_a_5", "delta_5_b",
        "delta_1_2_3_4", "delta_1_2_x", "delta_1_2_v", "delta_1_2_v3_4", "delta_1_2_99999999999",
        "delete_delta_1", "deltas_1_2", "something_else", "", "_v5",
    ],
)
def test_unparsable_directory_names_raise_naming_them(name: str) -> None:
    with pytest.raises(InvalidLayoutError) as info:
        layout.parse_directory(name)
    assert info.value.path == name
    assert isinstance(info.value, InvalidInputError)


def test_wrong_kind_of_directory_raises() -> None:
    with pytest.raises(InvalidLayoutError):
        ParsedBase.parse("delta_1_1")
    with pytest.raises(InvalidLayoutError):
        ParsedDelta.parse("base_1")


def test_parse_bucket_files() -> None:
    assert ParsedBucketFile.parse("bucket_00001") == ParsedBucketFile(1)
    assert ParsedBucketFile.parse("bucket_0") == ParsedBucketFile(0)
    assert ParsedBucketFile.parse("bucket_123") == ParsedBucketFile(123)
    assert ParsedBucketFile.parse("bucket_00023_5") == ParsedBucketFile(23, 5)
    assert layout.is_bucket_file("bucket_00001")
    assert layout.is_bucket_file("bucket_00001_0")
    for bad in ("bucket_00001_flush_length", "bucket_", "bucket_x", "bucket-0000-0000",
                "000001_0", "_orc_acid_version", "bucket_1_2_3"):
        assert not layout.is_bucket_file(bad)
        with pytest.raises(InvalidLayoutError):
            ParsedBucketFile.parse(bad)
    # the name has a bucket file's shape, but Hive's parseInt would overflow on it
    with pytest.raises(InvalidLayoutError):
        ParsedBucketFile.parse("bucket_99999999999")


def test_parse_original_files() -> None:
    assert ParsedOriginalFile.parse("000000_0") == ParsedOriginalFile(0)
    assert ParsedOriginalFile.parse("000001_1") == ParsedOriginalFile(1, 0, 1)
    assert ParsedOriginalFile.parse("000000_0_copy_2") == ParsedOriginalFile(0, 2)
    assert ParsedOriginalFile.parse("123456789_0").bucket_id == 123456789
    assert ParsedOriginalFile(0, 2).name == "000000_0_copy_2"
    assert layout.original_file_name(3, 1) == "000003_0_copy_1"
    assert layout.is_original_file("000000_0_copy_1")
    for bad in ("random", "000000", "000000_0_copy_", "000000_0_copy", "_done", "a_0",
                "bucket_00001", "000000_0_copy_1_2"):
        assert not layout.is_original_file(bad)
        with pytest.raises(InvalidLayoutError):
            ParsedOriginalFile.parse(bad)


def test_hidden_and_acid_names() -> None:
    assert layout.is_hidden("_done")
    assert layout.is_hidden(".hive-staging_dir")
    assert layout.is_hidden("_metadata_acid")
    assert not layout.is_hidden("base_1")
    assert not layout.is_hidden("000000_0")
    assert layout.is_acid_directory_name("base_1")
    assert layout.is_acid_directory_name("delta_1_1")
    assert layout.is_acid_directory_name("delete_delta_1_1")
    assert not layout.is_acid_directory_name("subdir")
    assert not layout.is_acid_directory_name("000000_0")


# --- parseBaseOrDeltaBucketFilename (TestAcidUtils#testParsing) -------------------------------


def test_parse_bucket_path_examples() -> None:
    assert layout.parse_bucket_path("/tmp/base_567/bucket_123") == BucketPathInfo(
        old_style=False, writing_base=True, min_write_id=0, max_write_id=567, bucket_id=123,
        statement_id=0)
    delta = layout.parse_bucket_path("mock:/tmp/delta_000005_000006/bucket_00001")
    assert (delta.old_style, delta.writing_base) == (False, False)
    assert (delta.min_write_id, delta.max_write_id, delta.bucket_id) == (5, 6, 1)
    assert delta.statement_id == -1
    delete = layout.parse_bucket_path("mock:/tmp/delete_delta_000005_000006/bucket_00001")
    assert (delete.old_style, delete.writing_base) == (False, False)
    assert (delete.min_write_id, delete.max_write_id, delete.bucket_id) == (5, 6, 1)
    bare = layout.parse_bucket_path("mock:/tmp/000123_0")
    assert (bare.old_style, bare.writing_base, bare.bucket_id) == (True, True, 123)
    assert (bare.min_write_id, bare.max_write_id) == (0, 0)
    # files written by LOAD DATA into a delta keep their original names
    load = layout.parse_bucket_path("mock:/tmp/delta_0000002_0000002_0000/000012_0")
    assert (load.old_style, load.writing_base, load.bucket_id) == (True, False, 12)
    assert (load.min_write_id, load.max_write_id) == (2, 2)


def test_parse_bucket_path_keeps_attempt_and_statement() -> None:
    info = layout.parse_bucket_path("t/delta_0000007_0000007_0003/bucket_00002_1")
    assert (info.statement_id, info.bucket_id, info.attempt_id) == (3, 2, 1)


@pytest.mark.parametrize(
    "path",
    ["t/delta_1_1/random", "t/delta_1_1/bucket_00001_flush_length", "t/subdir/bucket_00001",
     "bucket_00001", "t/delta_x_1/bucket_00001", "t/base_1/_orc_acid_version"],
)
def test_parse_bucket_path_refuses_to_guess(path: str) -> None:
    with pytest.raises(InvalidLayoutError):
        layout.parse_bucket_path(path)


# --- _metadata_acid ---------------------------------------------------------------------------


def test_metadata_acid_round_trip_and_hive_serialisation() -> None:
    compacted = MetadataAcid("0", "compacted")
    assert compacted.is_compacted
    assert compacted.to_json() == '{"thisFileVersion":"0","dataFormat":"compacted"}'
    assert layout.parse_metadata_acid(compacted.to_json()) == compacted
    truncated = layout.parse_metadata_acid('{"dataFormat": "truncated", "thisFileVersion": "0"}')
    assert not truncated.is_compacted
    assert layout.parse_metadata_acid('{"thisFileVersion":"0","dataFormat":"COMPACTED"}'
                                      ).is_compacted
    assert not MetadataAcid().is_compacted
    assert json.loads(MetadataAcid().to_json()) == {"thisFileVersion": "0"}


@pytest.mark.parametrize(
    "text",
    ['{"thisFileVersion":"1","dataFormat":"compacted"}', '{"dataFormat":"compacted"}',
     '{"thisFileVersion":"0"}', '{"thisFileVersion":"0","dataFormat":"acid"}',
     '{"thisFileVersion":0,"dataFormat":"compacted"}', "[]", "not json", ""],
)
def test_metadata_acid_unknown_content_is_refused(text: str) -> None:
    with pytest.raises(InvalidLayoutError):
        layout.parse_metadata_acid(text)


# --- value checks -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [lambda: ParsedBase(2**63), lambda: ParsedDelta(1, 2**63), lambda: ParsedDelta(1, 2, 2**31),
     lambda: ParsedBucketFile(-1), lambda: ParsedBucketFile(1, -2),
     lambda: ParsedOriginalFile(-1), lambda: ParsedBase(True)],
)
def test_out_of_range_values_are_refused(make: object) -> None:
    with pytest.raises(InvalidLayoutError):
        make()  # type: ignore[operator]


# --- round trips (hypothesis) -----------------------------------------------------------------


@given(write_id=longs, visibility=longs)
def test_base_round_trip(write_id: int, visibility: int) -> None:
    base = ParsedBase(write_id, visibility)
    assert ParsedBase.parse(base.name) == base
    assert layout.parse_directory(base.name).name == base.name


@given(low=longs, high=longs, statement=statement_ids, visibility=longs, delete=st.booleans())
def test_delta_round_trip(low: int, high: int, statement: int, visibility: int,
                          delete: bool) -> None:
    delta = ParsedDelta(low, high, statement, visibility, delete)
    assert ParsedDelta.parse(delta.name) == delta
    assert layout.parse_directory(delta.name).name == delta.name


@given(low=st.integers(0, 10**9), high=st.integers(0, 10**9),
       statement=st.one_of(st.just(-1), st.integers(0, 9999)), visibility=st.integers(0, 10**9),
       delete=st.booleans(), pad=st.integers(0, 12))
def test_unpadded_names_parse_like_their_canonical_form(
        low: int, high: int, statement: int, visibility: int, delete: bool, pad: int) -> None:
    prefix = "delete_delta_" if delete else "delta_"
    lenient = f"{prefix}{low:0{pad}d}_{high}"
    if statement != -1:
        lenient += f"_{statement}"
    if visibility:
        lenient += f"_v{visibility}"
    parsed = ParsedDelta.parse(lenient)
    assert parsed == ParsedDelta(low, high, statement, visibility, delete)
    assert ParsedDelta.parse(parsed.name) == parsed


@given(bucket=st.integers(0, INT_MAX), attempt=st.one_of(st.none(), st.integers(0, INT_MAX)))
def test_bucket_file_round_trip(bucket: int, attempt: int | None) -> None:
    parsed = ParsedBucketFile(bucket, attempt)
    assert ParsedBucketFile.parse(parsed.name) == parsed
    assert layout.is_bucket_file(parsed.name)
    side = layout.flush_length_file(parsed.name)
    assert not layout.is_bucket_file(side)
    assert layout.parse_flush_length_file(side) == parsed


@given(bucket=st.integers(0, INT_MAX), copy=st.integers(0, INT_MAX),
       task=st.integers(0, 10**6))
def test_original_file_round_trip(bucket: int, copy: int, task: int) -> None:
    parsed = ParsedOriginalFile(bucket, copy, task)
    assert ParsedOriginalFile.parse(parsed.name) == parsed
    assert layout.is_original_file(parsed.name)


@given(data_format=st.sampled_from(["compacted", "truncated"]))
def test_metadata_round_trip(data_format: str) -> None:
    meta = MetadataAcid("0", data_format)
    assert layout.parse_metadata_acid(meta.to_json()) == meta


# --- remembered parses ------------------------------------------------------------------------


@given(low=st.integers(0, 10**9), high=st.integers(0, 10**9),
       statement=st.one_of(st.just(-1), st.integers(0, 9999)), delete=st.booleans(),
       bucket=st.integers(0, INT_MAX))
def test_remembered_parses_equal_fresh_ones(low: int, high: int, statement: int,
                                            delete: bool, bucket: int) -> None:
    """``parse`` remembers results; each must equal a fresh parse of the same name, the
    first time and again."""
    delta = layout.delta_name(low, high, statement, delete=delete)
    base = layout.base_name(high, low)
    bucket_file = layout.bucket_file_name(bucket)
    for _ in range(2):
        assert ParsedDelta.parse(delta) == ParsedDelta._read(delta)
        assert ParsedBase.parse(base) == ParsedBase._read(base)
        assert ParsedBucketFile.parse(bucket_file) == ParsedBucketFile._read(bucket_file)


def test_remembered_parses_raise_every_time() -> None:
    """A name that does not parse is refused on every call, not only the first."""
    for _ in range(2):
        with pytest.raises(InvalidLayoutError, match="delta_1_x"):
            ParsedDelta.parse("delta_1_x")
        with pytest.raises(InvalidLayoutError, match="base_x"):
            ParsedBase.parse("base_x")
        with pytest.raises(InvalidLayoutError, match="bucket_x"):
            ParsedBucketFile.parse("bucket_x")
