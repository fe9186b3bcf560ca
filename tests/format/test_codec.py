"""BucketCodec: the ROW__ID ``bucket`` property (spec section 4, Hive's TestBucketCodec facts)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acidstore.errors import InvalidInputError
from acidstore.format.orc import BucketCodec
from acidstore.format.orc.codec import MAX_BUCKET_ID, MAX_STATEMENT_ID, MAX_VERSION, decode, encode

V0, V1 = BucketCodec.V0, BucketCodec.V1


def test_limits() -> None:
    assert (MAX_BUCKET_ID, MAX_STATEMENT_ID, MAX_VERSION) == (4095, 4095, 7)
    assert BucketCodec.MAX_BUCKET_ID == 4095
    assert BucketCodec.MAX_STATEMENT_ID == 4095
    assert list(BucketCodec) == [V0, V1]  # the limits are not codecs


@pytest.mark.parametrize(
    ("bucket", "statement", "value"),
    [
        (0, 0, 536870912),
        (0, 1, 536870913),
        (1, 0, 536936448),
        (2, 1, 537001985),
        (7, 16, 537329680),
        (4095, 4095, 805244927),
    ],
)
def test_spec_worked_examples(bucket: int, statement: int, value: int) -> None:
    assert V1.encode(bucket, statement) == value
    assert encode(bucket, statement) == value
    assert decode(value) == (bucket, statement)
    assert BucketCodec.decode(value) == (bucket, statement)
    assert BucketCodec.for_property(value) is V1


def test_hex_layout_reads_naturally() -> None:
    assert V1.encode(7, 16) == 0x20070010
    assert V1.encode(4095, 4095) == 0x2FFF0FFF


def test_v1_decodes_12_bit_fields() -> None:
    assert V1.decode_writer_id(0x0ABC0000) == 2748
    assert V1.decode_statement_id(0x00000ABC) == 2748
    assert V1.decode_writer_id(0x2ABC0DEF) == 0xABC
    assert V1.decode_statement_id(0x2ABC0DEF) == 0xDEF


def test_statement_minus_one_is_zero() -> None:
    assert V1.encode(7, -1) == V1.encode(7, 0) == 0x20070000
    assert encode(7) == 0x20070000


def test_v0_is_the_whole_int() -> None:
    assert V0.version == 0 and V1.version == 1
    assert V0.decode_writer_id(7) == 7
    assert V0.decode_statement_id(100) == 0
    assert V0.decode_statement_id(-10) == 0
    assert V0.encode(7) == 7
    assert V0.encode(7, 3) == 7  # V0 has no statement field
    assert BucketCodec.for_property(7) is V0
    assert decode(7) == (7, 0)
    assert decode(2**29 - 1) == (2**29 - 1, 0)


def test_get_codec() -> None:
    assert BucketCodec.get_codec(0) is V0
    assert BucketCodec.get_codec(1) is V1
    with pytest.raises(InvalidInputError, match=r"Illegal 'bucket' format\. Version=4"):
        BucketCodec.get_codec(4)


@pytest.mark.parametrize(
    ("value", "version", "hex_text"),
    [
        (2 << 29, 2, "40000000"),
        (3 << 29, 3, "60000000"),
        (-1, 7, "ffffffff"),
        (-(2**31), 4, "80000000"),
    ],
)
def test_unknown_versions_are_rejected(value: int, version: int, hex_text: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        BucketCodec.for_property(value)
    message = str(info.value)
    assert f"Illegal 'bucket' format. Version={version}" in message
    assert hex_text in message
    with pytest.raises(InvalidInputError, match=f"Version={version}"):
        decode(value)


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 1.5, "1", True])
def test_non_int32_properties_are_rejected(value: object) -> None:
    with pytest.raises(InvalidInputError):
        decode(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("bucket", "statement", "message"),
    [
        (-1, 16, "Bucket ID out of range: -1"),
        (MAX_BUCKET_ID + 1, 16, "Bucket ID out of range: 4096 max: 4095"),
        (7, -2, "Illegal statementId value: -2"),
        (7, MAX_STATEMENT_ID + 1, "Statement ID out of range: 4096"),
    ],
)
def test_out_of_range_ids_name_the_value(bucket: int, statement: int, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        V1.encode(bucket, statement)


def test_v0_rejects_buckets_that_would_look_like_another_version() -> None:
    with pytest.raises(InvalidInputError, match="V0"):
        V0.encode(2**29)
    with pytest.raises(InvalidInputError, match="-1"):
        V0.encode(-1)


# --- newer codec: bucket ids above 4095 borrow statement bits ---------------------------------


def test_bucket_takes_extra_8_bits_from_statement() -> None:
    value = V1.encode(5000, 12, max_statement_id=100)
    assert value == 0x2388008C
    assert V1.decode_statement_id(value) == 0b10001100
    assert V1.decode_writer_id(value) == 0b1110001000


def test_bucket_takes_extra_4_bits_from_statement() -> None:
    value = V1.encode(65535, 150, max_statement_id=150)
    assert V1.decode_statement_id(value) == 0b111110010110
    assert V1.decode_writer_id(value) == 0b111111111111


def test_no_room_to_overflow_bucket() -> None:
    with pytest.raises(InvalidInputError, match="Bucket ID out of range: 65536 max: 65535"):
        V1.encode(65536, 1, max_statement_id=150)


def test_bucket_roll_over() -> None:
    for bucket in range(16384):
        value = V1.encode(bucket, 10, max_statement_id=0b001000000000)  # 2 bits free
        assert V1.decode_writer_id(value) == bucket % 4096
        assert V1.decode_statement_id(value) == ((bucket >> 12) << 10) | 10


def test_max_statement_zero_counts_as_one() -> None:
    # Single-statement txn: 11 bits are free, so bucket ids up to 2**23 - 1 fit.
    assert V1.encode(2**23 - 1, 0, max_statement_id=0) == 0x2FFF0FFE
    with pytest.raises(InvalidInputError, match="max: 8388607"):
        V1.encode(2**23, 0, max_statement_id=0)


def test_unknown_max_statement_leaves_no_room() -> None:
    assert V1.encode(4095, 1, max_statement_id=-1) == V1.encode(4095, 1)
    with pytest.raises(InvalidInputError, match="max: 4095"):
        V1.encode(4096, 1, max_statement_id=-1)


def test_max_statement_out_of_range() -> None:
    with pytest.raises(InvalidInputError, match="Max Statement ID out of range: 4096"):
        V1.encode(1, 0, max_statement_id=4096)


def test_statement_above_max_cannot_share_bits_with_bucket_overflow() -> None:
    with pytest.raises(InvalidInputError, match="exceeds max statement id"):
        V1.encode(5000, 200, max_statement_id=100)
    # Without overflow the statement field is whole, as in Hive.
    assert V1.encode(10, 200, max_statement_id=100) == 0x200A00C8


# --- properties -------------------------------------------------------------------------------

buckets = st.integers(0, MAX_BUCKET_ID)
statements = st.integers(-1, MAX_STATEMENT_ID)


@given(buckets, statements)
def test_v1_round_trip(bucket: int, statement: int) -> None:
    value = encode(bucket, statement)
    assert 0 < value < 2**31
    assert decode(value) == (bucket, max(0, statement))
    assert BucketCodec.for_property(value) is V1


@given(buckets, statements, buckets, statements)
def test_v1_order_groups_by_bucket_then_statement(
    b1: int, s1: int, b2: int, s2: int
) -> None:
    # Sorting by ROW__ID must keep each bucket's rows together (the codec's reason for its
    # bit order).
    key1, key2 = (b1, max(0, s1)), (b2, max(0, s2))
    assert (encode(b1, s1) < encode(b2, s2)) == (key1 < key2)


@given(st.integers(0, 2**29 - 1))
def test_v0_round_trip(bucket: int) -> None:
    assert decode(V0.encode(bucket)) == (bucket, 0)


@st.composite
def overflow_cases(draw: st.DrawFn) -> tuple[int, int, int]:
    max_statement = draw(st.integers(0, MAX_STATEMENT_ID))
    effective = max(max_statement, 1)
    extra_bits = 12 - effective.bit_length()
    bucket = draw(st.integers(0, (1 << (12 + extra_bits)) - 1))
    statement = draw(st.integers(-1, effective))
    return bucket, statement, max_statement


@given(overflow_cases())
def test_overflow_encoding_recovers_bucket_and_statement(case: tuple[int, int, int]) -> None:
    bucket, statement, max_statement = case
    value = V1.encode(bucket, statement, max_statement_id=max_statement)
    assert BucketCodec.for_property(value) is V1
    writer = V1.decode_writer_id(value)
    field = V1.decode_statement_id(value)
    # Knowing max_statement, the borrowed high bits give the bucket back without collisions.
    stmt_bits = max(max_statement, 1).bit_length()
    assert field & ((1 << stmt_bits) - 1) == max(0, statement)
    assert (field >> stmt_bits) << 12 | writer == bucket
    if bucket <= MAX_BUCKET_ID:
        assert value == encode(bucket, statement)


@given(st.integers(-(2**31), 2**31 - 1))
def test_decode_any_int32_is_total_or_rejects_version(value: int) -> None:
    version = (value >> 29) & 0b111
    if version in (0, 1):
        bucket, statement = decode(value)
        assert BucketCodec.for_property(value).version == version
        if version == 1:
            assert V1.encode(bucket, statement) == value & 0xEFFF0FFF  # reserved bits dropped
    else:
        with pytest.raises(InvalidInputError, match=f"Version={version}"):
            decode(value)
