"""The ``bucket`` field of ROW__ID (spec section 4, Hive's ``BucketCodec``).

Every ACID event carries a 32-bit ``bucket`` property. Before Hive 3 it was just the bucket
number (V0); since Hive 3 it packs a version, the writer (bucket) id and the statement id (V1),
so that ROW__IDs stay unique across the statements of one transaction that write the same
bucket, and sorting by ROW__ID still groups a bucket's rows together:

    vvv r bbbbbbbbbbbb rrrr ssssssssssss      (bits 31..0; v version, b bucket, s statement)

The reserved nibble makes the value read naturally in hex (bucket 7, statement 16 is
0x20070010). Newer Hive lets bucket ids above 4095 borrow the statement field's unused high
bits when the writer knows the transaction's highest statement id; decoding still returns the
raw 12-bit fields, exactly like Hive.

Kept pure (stdlib only): readers decode whole columns with numpy bit operations themselves.
"""

from __future__ import annotations

import enum
from typing import Final

from acidstore.errors import InvalidInputError

__all__ = [
    "MAX_BUCKET_ID",
    "MAX_STATEMENT_ID",
    "MAX_VERSION",
    "BucketCodec",
    "decode",
    "encode",
]

_VERSION_BITS: Final = 3
_BUCKET_BITS: Final = 12
_STATEMENT_BITS: Final = 12
_VERSION_SHIFT: Final = 1 + _BUCKET_BITS + 4 + _STATEMENT_BITS  # 29
_BUCKET_SHIFT: Final = 4 + _STATEMENT_BITS  # 16
_VERSION_MASK: Final = 0b111 << _VERSION_SHIFT  # 0xE0000000
_BUCKET_MASK: Final = 0x0FFF0000
_STATEMENT_MASK: Final = 0x00000FFF

MAX_VERSION: Final = (1 << _VERSION_BITS) - 1  # 7
MAX_BUCKET_ID: Final = (1 << _BUCKET_BITS) - 1  # 4095
MAX_STATEMENT_ID: Final = (1 << _STATEMENT_BITS) - 1  # 4095

_INT_MIN: Final = -(2**31)
_INT_MAX: Final = 2**31 - 1


def _check_property(value: int) -> None:
    """The property is a Java ``int``; anything wider cannot have come from an ORC file."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"bucket property must be an int, got {value!r}")
    if not _INT_MIN <= value <= _INT_MAX:
        raise InvalidInputError(f"bucket property {value} does not fit a 32-bit int")


def _check_statement_id(statement_id: int) -> int:
    """-1 ("no statement suffix") encodes as 0; below that Hive's writer options refuse it."""
    if isinstance(statement_id, bool) or not isinstance(statement_id, int):
        raise InvalidInputError(f"statement id must be an int, got {statement_id!r}")
    if statement_id < -1:
        raise InvalidInputError(f"Illegal statementId value: {statement_id}")
    return max(0, statement_id)


def _check_bucket_id(bucket_id: int) -> None:
    if isinstance(bucket_id, bool) or not isinstance(bucket_id, int):
        raise InvalidInputError(f"bucket id must be an int, got {bucket_id!r}")
    if bucket_id < 0:
        raise InvalidInputError(f"Bucket ID out of range: {bucket_id}")


class BucketCodec(enum.Enum):
    """The two encodings Hive knows; pick one with ``for_property`` when reading."""

    V0 = 0
    V1 = 1

    MAX_BUCKET_ID: Final = enum.nonmember(MAX_BUCKET_ID)
    MAX_STATEMENT_ID: Final = enum.nonmember(MAX_STATEMENT_ID)
    MAX_VERSION: Final = enum.nonmember(MAX_VERSION)

    @property
    def version(self) -> int:
        """The number stored in the top three bits."""
        return int(self.value)

    @classmethod
    def get_codec(cls, version: int) -> BucketCodec:
        """Only V0 and V1 exist; any other version means the data is not Hive ACID data."""
        if version == 0:
            return cls.V0
        if version == 1:
            return cls.V1
        raise InvalidInputError(f"Illegal 'bucket' format. Version={version}")

    @classmethod
    def for_property(cls, value: int) -> BucketCodec:
        """The codec a stored property was written with, from its top three bits."""
        _check_property(value)
        version = (value & _VERSION_MASK) >> _VERSION_SHIFT
        try:
            return cls.get_codec(version)
        except InvalidInputError as exc:
            # Hive prints the property as Integer.toHexString (two's complement for negatives).
            raise InvalidInputError(
                f"{exc}. Cannot decode version from bucket number: {value & 0xFFFFFFFF:x}"
            ) from None

    def decode_writer_id(self, value: int) -> int:
        """The bucket number for bucketed tables, the writer (task) id otherwise; always the
        ``N`` of the ``bucket_N`` file the event belongs to."""
        _check_property(value)
        if self is BucketCodec.V0:
            return value
        return (value & _BUCKET_MASK) >> _BUCKET_SHIFT

    def decode_statement_id(self, value: int) -> int:
        """The raw 12-bit statement field (V0 data predates statement ids: always 0)."""
        _check_property(value)
        if self is BucketCodec.V0:
            return 0
        return value & _STATEMENT_MASK

    def encode(
        self, bucket_id: int, statement_id: int = 0, *, max_statement_id: int | None = None
    ) -> int:
        """Pack a bucket (writer) id and statement id into a property of this version.

        ``max_statement_id`` is the highest statement id of the transaction when the writer
        knows it (None or negative: unknown, 0 counts as 1, as in Hive). Only then can a bucket
        id above 4095 borrow the statement field's unused high bits.
        """
        statement_id = _check_statement_id(statement_id)
        _check_bucket_id(bucket_id)
        if self is BucketCodec.V0:
            # Hive returns the bucket id unchecked; it must stay below the version bits or it
            # would read back as another version.
            if bucket_id >= 1 << _VERSION_SHIFT:
                raise InvalidInputError(f"Bucket ID out of range for V0: {bucket_id}")
            return bucket_id
        return _encode_v1(bucket_id, statement_id, max_statement_id)

    @staticmethod
    def decode(value: int) -> tuple[int, int]:
        """``(bucket_id, statement_id)`` of a stored property, whichever version wrote it."""
        return decode(value)


def _encode_v1(bucket_id: int, statement_id: int, max_statement_id: int | None) -> int:
    if statement_id > MAX_STATEMENT_ID:
        raise InvalidInputError(f"Statement ID out of range: {statement_id}")
    if max_statement_id is None or max_statement_id < 0:
        max_statement_id = MAX_STATEMENT_ID
    elif max_statement_id == 0:
        max_statement_id = 1  # a single-statement txn: keep one bit for statement 0
    if max_statement_id > MAX_STATEMENT_ID:
        # (Hive's message names the bucket id here; the offending value is more useful.)
        raise InvalidInputError(f"Max Statement ID out of range: {max_statement_id}")
    statement_field = statement_id
    if bucket_id > MAX_BUCKET_ID:
        extra_bits = _STATEMENT_BITS - max_statement_id.bit_length()
        max_bucket_id = (1 << (_BUCKET_BITS + extra_bits)) - 1
        if bucket_id > max_bucket_id:
            raise InvalidInputError(f"Bucket ID out of range: {bucket_id} max: {max_bucket_id}")
        if statement_id > max_statement_id:
            # Hive does not check this, and the statement id would then overlap the borrowed
            # bucket bits, giving two writers the same ROW__IDs.
            raise InvalidInputError(
                f"Statement ID {statement_id} exceeds max statement id {max_statement_id}, "
                f"so bucket ID {bucket_id} cannot borrow its high bits"
            )
        overflow = bucket_id >> _BUCKET_BITS
        statement_field = (overflow << (_STATEMENT_BITS - extra_bits)) | statement_id
        bucket_id &= MAX_BUCKET_ID
    return (
        BucketCodec.V1.version << _VERSION_SHIFT | bucket_id << _BUCKET_SHIFT | statement_field
    )


def encode(bucket_id: int, statement_id: int = 0) -> int:
    """The property a Hive 3+ writer stores (V1); statement -1 is the same as 0."""
    return BucketCodec.V1.encode(bucket_id, statement_id)


def decode(value: int) -> tuple[int, int]:
    """``(bucket_id, statement_id)`` of a stored property, whichever version wrote it."""
    codec = BucketCodec.for_property(value)
    return codec.decode_writer_id(value), codec.decode_statement_id(value)
