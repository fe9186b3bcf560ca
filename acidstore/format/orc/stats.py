"""Integer column statistics of each stripe, from an ORC file's metadata section.

A filtered read skips a stripe when its statistics prove that no row can pass (a stripe whose
``id`` runs from 5,000 to 9,999 holds no row of ``id < 100``). pyarrow decodes ORC but does
not expose stripe statistics, and pyorc reads them only by opening the file again and
positioning a row reader (about 2 ms a file), so the few protobuf fields needed are read here:

- the metadata section sits just before the footer; its length is the postscript's
  ``metadataLength``, which pyarrow reports as ``stripe_statistics_length``;
- ``Metadata { repeated StripeStatistics stripeStats = 1 }``, ``StripeStatistics { repeated
  ColumnStatistics colStats = 1 }`` indexed by ORC column id, ``ColumnStatistics {
  numberOfValues = 1; IntegerStatistics intStatistics = 2; hasNull = 10 }`` and
  ``IntegerStatistics { sint64 minimum = 1; sint64 maximum = 2 }``;
- the section is an ORC stream: chunks with a 3-byte header (length << 1 | original), each
  compressed with the file's codec.

Anything unexpected (an unknown codec, a malformed message) gives ``None``: the read then
decodes every stripe, which is what it did before statistics were used.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from acidstore.format.orc.footer import _fields, _read_varint

__all__ = [
    "IntegerStats",
    "column_ids",
    "integer_statistics",
    "stripe_column_statistics",
]


@dataclass(frozen=True)
class IntegerStats:
    """One integer column of one stripe: how many non-NULL values, and their range (None
    when the writer recorded none)."""

    values: int | None
    minimum: int | None
    maximum: int | None


def column_ids(schema: pa.Schema) -> list[int]:
    """The ORC column id of each top-level field of ``schema`` (ids number the type tree in
    pre-order from the root struct, 0), and one past the last id as the final element."""
    ids = []
    next_id = 1
    for field in schema:
        ids.append(next_id)
        next_id += _subtree_size(field.type)
    ids.append(next_id)
    return ids


def _subtree_size(typ: pa.DataType) -> int:
    return 1 + sum(_subtree_size(typ.field(i).type) for i in range(typ.num_fields))


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _zstd_content_size(frame: bytes) -> int | None:
    """The decompressed size a zstd frame declares (pyarrow needs it exactly), or None."""
    if len(frame) < 6 or frame[:4] != b"\x28\xb5\x2f\xfd":
        return None
    descriptor = frame[4]
    size_flag, single, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
    width = (1 if single else 0, 2, 4, 8)[size_flag]
    if width == 0 or len(frame) < pos + width:
        return None
    size = int.from_bytes(frame[pos:pos + width], "little")
    return size + 256 if width == 2 else size


def _decompress(codec: str, chunk: bytes) -> bytes | None:
    if codec == "ZLIB":
        return zlib.decompress(chunk, -15)  # ORC's ZLIB is raw deflate
    if codec == "ZSTD":
        size = _zstd_content_size(chunk)
        if size is None:
            return None
        plain: bytes = pa.Codec("zstd").decompress(chunk, decompressed_size=size).to_pybytes()
        return plain
    if codec == "SNAPPY":
        size, _ = _read_varint(chunk, 0)  # a snappy block starts with its decompressed size
        plain = pa.Codec("snappy").decompress(chunk, decompressed_size=size).to_pybytes()
        return plain
    return None


def _stream(data: bytes, codec: str) -> bytes | None:
    """The bytes of an ORC stream, chunk by chunk."""
    if codec == "UNCOMPRESSED":
        return data
    out = bytearray()
    pos = 0
    while pos < len(data):
        if pos + 3 > len(data):
            return None
        header = int.from_bytes(data[pos:pos + 3], "little")
        length = header >> 1
        chunk = data[pos + 3:pos + 3 + length]
        pos += 3 + length
        plain = chunk if header & 1 else _decompress(codec, chunk)
        if plain is None:
            return None
        out += plain
    return bytes(out)


def _integer_stats(message: bytes) -> IntegerStats:
    values: int | None = None
    minimum = maximum = None
    for number, wire, value, _ in _fields(message):
        if number == 1 and wire == 0 and isinstance(value, int):
            values = value
        elif number == 2 and wire == 2 and isinstance(value, bytes):
            for inner, inner_wire, bound, _ in _fields(value):
                if inner_wire == 0 and isinstance(bound, int) and inner in (1, 2):
                    if inner == 1:
                        minimum = _zigzag(bound)
                    else:
                        maximum = _zigzag(bound)
    return IntegerStats(values, minimum, maximum)


def stripe_column_statistics(metadata: bytes, codec: str, nstripes: int
                             ) -> list[list[bytes]] | None:
    """Per stripe, the undecoded ColumnStatistics message of each ORC column (by column id),
    from the raw bytes of a file's metadata section and its codec (pyarrow's name:
    ``ZSTD``...). None when they cannot be read, or the file does not hold one entry per
    stripe. Decompressing and splitting the section is most of the cost, so a file keeps
    this and answers every later question from it (``integer_statistics``)."""
    try:
        plain = _stream(metadata, codec)
        if plain is None:
            return None
        stripes = [value for number, wire, value, _ in _fields(plain)
                   if number == 1 and wire == 2]
        if len(stripes) != nstripes:
            return None
        out: list[list[bytes]] = []
        for stripe in stripes:
            assert isinstance(stripe, bytes)
            out.append([value for number, wire, value, _ in _fields(stripe)  # type: ignore[misc]
                        if number == 1 and wire == 2])
        return out
    except (ValueError, IndexError, zlib.error, pa.ArrowException):
        return None


def integer_statistics(columns: Sequence[list[bytes]], wanted: Sequence[int]
                       ) -> list[dict[int, IntegerStats]] | None:
    """Per stripe, the statistics of the ORC columns ``wanted`` (integer columns), from
    ``stripe_column_statistics``; None when a message is malformed."""
    try:
        return [{c: _integer_stats(stripe[c]) for c in wanted if c < len(stripe)}
                for stripe in columns]
    except (ValueError, IndexError):
        return None
