"""Add ORC user metadata to a finished ORC file by rewriting only its tail.

Hive's ACID writer stores ``hive.acid.key.index``, ``hive.acid.stats`` and ``hive.acid.version``
as ORC *user metadata* (spec §3.2). pyarrow writes ORC fast but cannot write user metadata, and
the row-at-a-time pyorc writer is far too slow for bulk data. So we let pyarrow write the file
and then append the metadata to the file footer:

- A serialized protobuf message followed by more serialized fields of the same message parses
  as the merged message, and repeated fields append. The footer's ``metadata`` field (number 5,
  ``repeated UserMetadataItem``) can therefore be extended by appending bytes.
- A compressed ORC stream is a sequence of chunks, each with a 3-byte header whose low bit says
  "stored uncompressed". Appending uncompressed chunks needs no codec.
- The postscript (never compressed) records the footer length; it is re-encoded with the new
  length, every other field kept byte for byte.

The stripes and the stripe-statistics section are untouched, so the data is exactly what
pyarrow wrote.
"""

from __future__ import annotations

from collections.abc import Mapping

from acidstore.errors import CorruptFileError

__all__ = ["POSTSCRIPT_TAIL", "add_user_metadata", "metadata_tail"]

_MAGIC = b"ORC"
_FOOTER_METADATA_FIELD = 5
_PS_FOOTER_LENGTH = 1
_PS_COMPRESSION = 2
_PS_BLOCK_SIZE = 3
_COMPRESSION_NONE = 0
_MAX_CHUNK = (1 << 23) - 1  # the 3-byte chunk header holds length << 1


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(message: bytes) -> list[tuple[int, int, int | bytes, bytes]]:
    """Split a protobuf message into (field number, wire type, value, raw bytes) in order."""
    out: list[tuple[int, int, int | bytes, bytes]] = []
    pos = 0
    while pos < len(message):
        start = pos
        key, pos = _read_varint(message, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _read_varint(message, pos)
        elif wire == 2:
            length, pos = _read_varint(message, pos)
            value = message[pos:pos + length]
            if len(value) != length:
                raise ValueError("truncated field")
            pos += length
        elif wire == 1:
            value, pos = message[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = message[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((number, wire, value, message[start:pos]))
    return out


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _metadata_items(items: Mapping[str, bytes]) -> bytes:
    encoded = b""
    for name, value in items.items():
        item = _length_delimited(1, name.encode("utf-8")) + _length_delimited(2, bytes(value))
        encoded += _length_delimited(_FOOTER_METADATA_FIELD, item)
    return encoded


def _as_stream(payload: bytes, compressed: bool, block_size: int) -> bytes:
    """Encode ``payload`` as ORC stream bytes: raw, or as uncompressed ("original") chunks."""
    if not compressed:
        return payload
    limit = max(1, min(block_size, _MAX_CHUNK))
    out = bytearray()
    for start in range(0, len(payload), limit):
        chunk = payload[start:start + limit]
        header = (len(chunk) << 1) | 1
        out += header.to_bytes(3, "little") + chunk
    return bytes(out)


#: an ORC file's last bytes that always hold its whole postscript and the postscript's length
POSTSCRIPT_TAIL = 256


def metadata_tail(tail: bytes, items: Mapping[str, bytes], *, path: str = "<buffer>"
                  ) -> tuple[int, bytes]:
    """What replaces the end of an ORC file to add ``items`` to its user metadata.

    ``tail`` is the file's last bytes (at least the postscript and its length byte: the last
    ``POSTSCRIPT_TAIL`` bytes always do). Returns how many trailing bytes to drop and the
    bytes to write in their place; everything before them is kept as written, which is what
    lets a streaming writer send the file on as it is produced and hold back only its tail.
    """
    try:
        if not tail:
            raise ValueError("empty file")
        ps_length = tail[-1]
        ps_start = len(tail) - 1 - ps_length
        if ps_start < 0:
            raise ValueError("truncated postscript")
        fields = _fields(tail[ps_start:-1])
        values = {number: value for number, _, value, _ in fields}
        footer_length = values.get(_PS_FOOTER_LENGTH)
        compression = values.get(_PS_COMPRESSION, _COMPRESSION_NONE)
        block_size = values.get(_PS_BLOCK_SIZE, 256 * 1024)
        if not isinstance(footer_length, int) or not isinstance(compression, int) \
                or not isinstance(block_size, int):
            raise ValueError("malformed postscript")
    except (ValueError, IndexError) as exc:
        raise CorruptFileError(f"cannot add ORC user metadata: {exc}", path=path) from exc

    extra = _as_stream(_metadata_items(items), compression != _COMPRESSION_NONE, block_size)
    new_footer_length = footer_length + len(extra)
    postscript = bytearray()
    for number, wire, _, raw in fields:
        if number == _PS_FOOTER_LENGTH and wire == 0:
            postscript += _varint(_PS_FOOTER_LENGTH << 3) + _varint(new_footer_length)
        else:
            postscript += raw
    if len(postscript) > 255:
        raise CorruptFileError("ORC postscript grew beyond 255 bytes", path=path)
    return ps_length + 1, extra + bytes(postscript) + bytes([len(postscript)])


def add_user_metadata(data: bytes, items: Mapping[str, bytes], *, path: str = "<buffer>") -> bytes:
    """Return the ORC file ``data`` with ``items`` added to its user metadata."""
    if not items:
        return data
    if len(data) < 4 or data[:3] != _MAGIC:
        raise CorruptFileError("cannot add ORC user metadata: missing ORC header", path=path)
    drop, replacement = metadata_tail(data[-POSTSCRIPT_TAIL:], items, path=path)
    return data[:len(data) - drop] + replacement
