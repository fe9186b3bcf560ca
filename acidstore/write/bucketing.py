"""Bucket assignment exactly as Hive's bucketing version 2 computes it, vectorised.

A row's bucket is ``(hash & 0x7fffffff) % buckets`` where ``hash`` folds the bucket columns as
``h = 31 * h + field_hash`` (32-bit wrap-around). A field hash is Hive's ``Murmur3.hash32`` (seed
104729) of the value's bytes: big-endian 2/4/8 bytes for SMALLINT/INT/DATE/BIGINT, the UTF-8
bytes for STRING; a TINYINT hashes to itself, a BOOLEAN to 1/0, and NULL to 0. FLOAT/DOUBLE hash
the big-endian bytes of ``(float) floatToIntBits(f)`` / ``(double) doubleToLongBits(d)``: Hive
passes the integer bit pattern (NaN made canonical) to ``putFloat``/``putDouble``, so Java widens
it back to a floating value first. Matching Hive means a table bucketed here has the same rows in
``bucket_N`` as Hive would put there, so Hive's bucket pruning and bucketed joins stay correct.

One quirk is kept on purpose: Hive's ``hash32`` sign-extends the 1-3 tail bytes of its input
(``data[i] << 16`` on a Java ``byte``), so strings whose length is not a multiple of 4 and whose
tail holds bytes >= 0x80 hash differently from textbook Murmur3. We hash as Hive does.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from acidstore.errors import InvalidInputError

__all__ = ["HASH_CHUNK_ROWS", "SEED", "bucket_ids", "buckets_of_values", "check_bucketable",
           "murmur3_32", "row_hashes"]

SEED = 104729
U32 = npt.NDArray[np.uint32]
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_N = np.uint32(0xE6546B64)
_M = np.uint32(5)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)


def _rotl(x: U32, r: int, scratch: U32) -> None:
    """Rotate ``x`` left by ``r`` bits in place (``scratch``: an array of its length)."""
    np.left_shift(x, np.uint32(r), out=scratch)
    x >>= np.uint32(32 - r)
    x |= scratch


def _mix_k(k: U32, scratch: U32) -> None:
    """Murmur3's scrambling of a block ``k``, in place."""
    k *= _C1
    _rotl(k, 15, scratch)
    k *= _C2


def _hash_words(n: int, words: Sequence[U32], tail: U32 | None, length: int) -> U32:
    """Murmur3 (seed ``SEED``) of ``n`` rows of ``length`` bytes, given as the little-endian
    4-byte blocks of each row (``words[i]``: block ``i`` of every row; modified in place) and
    the tail bytes packed as Hive packs them (None: no tail).

    Every step works in place, on the blocks and one scratch array: the textbook expression
    allocates a temporary array per operator, about 20 per block."""
    h = np.full(n, SEED, dtype=np.uint32)
    scratch = np.empty(n, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for k in words:
            _mix_k(k, scratch)
            h ^= k
            _rotl(h, 13, scratch)
            h *= _M
            h += _N
        if tail is not None:
            _mix_k(tail, scratch)
            h ^= tail
        h ^= np.uint32(length)
        for shift, factor in ((16, _F1), (13, _F2)):
            np.right_shift(h, np.uint32(shift), out=scratch)
            h ^= scratch
            h *= factor
        np.right_shift(h, np.uint32(16), out=scratch)
        h ^= scratch
    return h


def murmur3_32(data: npt.NDArray[np.uint8]) -> U32:
    """Hive's ``Murmur3.hash32`` of each row of an (n, length) byte matrix (one length)."""
    n, length = data.shape
    blocks = length // 4
    words: list[U32] = []
    if blocks:
        matrix = np.ascontiguousarray(data[:, :blocks * 4]).view("<u4").reshape(n, blocks)
        words = [matrix[:, i].astype(np.uint32) for i in range(blocks)]  # fresh copies
    tail: U32 | None = None
    if length - blocks * 4:
        signed = data[:, blocks * 4:].view(np.int8).astype(np.int32)  # Java bytes
        k1 = np.zeros(n, dtype=np.int32)
        for j in range(length - blocks * 4 - 1, -1, -1):
            k1 ^= signed[:, j] << (8 * j)
        tail = k1.view(np.uint32)
    return _hash_words(n, words, tail, length)


def _fixed(values: npt.NDArray[np.generic], width: int) -> U32:
    """Hash of the big-endian bytes of fixed-width integers.

    The 4-byte blocks of a 4- or 8-byte big-endian value are its 32-bit halves, high half
    first, each byte-swapped: taken from the values by contiguous shifts and casts, where a
    byte matrix sliced into blocks copies strided memory (a 2M-row BIGINT column hashes in
    about 6 ms instead of 8, before any bucket file can start)."""
    if width in (4, 8) and values.dtype.itemsize == width and sys.byteorder == "little":
        raw = np.ascontiguousarray(values).view(f"u{width}")
        words = [raw.astype(np.uint32)] if width == 4 else [
            (raw >> np.uint64(32)).astype(np.uint32), raw.astype(np.uint32)]
        for word in words:
            word.byteswap(inplace=True)
        return _hash_words(len(values), words, None, width)
    be = values.astype(f">i{width}").view(np.uint8).reshape(len(values), width)
    return murmur3_32(be)


def _strings(array: pa.Array) -> U32:
    """Hash of each string's UTF-8 bytes, one vectorised pass per distinct length."""
    array = array.cast(pa.large_string()) if not pa.types.is_large_string(array.type) else array
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset:
                                                               array.offset + len(array) + 1]
    data_buffer = array.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None \
        else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    out = np.zeros(len(array), dtype=np.uint32)
    for length in np.unique(lengths):
        rows = np.flatnonzero(lengths == length)
        matrix = data[starts[rows, None] + np.arange(int(length))] if length else \
            np.zeros((len(rows), 0), np.uint8)
        out[rows] = murmur3_32(matrix)
    return out


def check_bucketable(field: pa.Field) -> None:
    """Refuse bucket columns whose type Hive cannot bucket by (version 2)."""
    t = field.type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_date32(t)):
        raise InvalidInputError(
            f"cannot bucket by column {field.name!r} of type {t}: Hive's bucketing supports "
            "integers, floats, booleans, strings and dates")


def _filled(array: pa.Array, value: object) -> pa.Array:
    """``array`` with NULLs as ``value``; itself when it has none (``fill_null`` copies the
    whole array even then)."""
    return array.fill_null(value) if array.null_count else array


def _field_hash(array: pa.Array) -> U32:
    t = array.type
    if pa.types.is_boolean(t):
        out: U32 = np.asarray(_filled(array, False).to_numpy(zero_copy_only=False),
                              dtype=np.uint32)
    elif pa.types.is_int8(t) or pa.types.is_uint8(t):
        out = _filled(array, 0).to_numpy(zero_copy_only=False).astype(np.int32).view(np.uint32)
    elif pa.types.is_int16(t) or pa.types.is_uint16(t):
        out = _fixed(_filled(array, 0).to_numpy(zero_copy_only=False), 2)
    elif (pa.types.is_integer(t) and t.bit_width == 32) or pa.types.is_date32(t):
        raw = array.cast(pa.int32()) if pa.types.is_date32(t) else array
        out = _fixed(_filled(raw, 0).to_numpy(zero_copy_only=False), 4)
    elif pa.types.is_integer(t):
        out = _fixed(_filled(array, 0).to_numpy(zero_copy_only=False), 8)
    elif pa.types.is_floating(t):
        values = _filled(array, 0).to_numpy(zero_copy_only=False)
        if t.bit_width == 32:
            bits = np.where(np.isnan(values), np.float32("nan"), values).astype(np.float32)
            ints = bits.view(np.int32).copy()
            ints[np.isnan(bits)] = 0x7FC00000  # Java's canonical float NaN
            # Hive: putFloat(Float.floatToIntBits(f)) widens the int bits back to a float
            out = _fixed(ints.astype(np.float32).view(np.int32), 4)
        else:
            dbl = values.astype(np.float64)
            longs = dbl.view(np.int64).copy()
            longs[np.isnan(dbl)] = 0x7FF8000000000000  # Java's canonical double NaN
            # Hive: putDouble(Double.doubleToLongBits(d)) widens the long bits to a double
            out = _fixed(longs.astype(np.float64).view(np.int64), 8)
    else:
        out = _strings(_filled(array, ""))
    if array.null_count:
        out = np.where(pc.is_null(array).to_numpy(zero_copy_only=False), np.uint32(0), out
                       ).astype(np.uint32)
    return out


#: rows hashed at a time: the hash's temporaries (several per input byte) then stay in the
#: CPU's cache instead of being allocated (page faults) and streamed through memory at the
#: size of the whole input; 10M rows hash in about half the CPU time this way
HASH_CHUNK_ROWS = 1 << 16


def row_hashes(table: pa.Table, columns: Sequence[str]) -> U32:
    """Hive's bucket hash code of each row over ``columns`` (as unsigned 32-bit)."""
    if table.num_rows <= HASH_CHUNK_ROWS:
        return _chunk_hashes(table, columns)
    out = np.empty(table.num_rows, dtype=np.uint32)
    for start in range(0, table.num_rows, HASH_CHUNK_ROWS):
        out[start:start + HASH_CHUNK_ROWS] = _chunk_hashes(
            table.slice(start, HASH_CHUNK_ROWS), columns)
    return out


def _chunk_hashes(table: pa.Table, columns: Sequence[str]) -> U32:
    h = np.zeros(table.num_rows, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for name in columns:
            chunks = table.column(name)
            # a slice within one chunk is hashed in place: ``combine_chunks`` copies even a
            # single chunk
            column = chunks.chunk(0) if chunks.num_chunks == 1 else chunks.combine_chunks()
            h *= np.uint32(31)
            h += _field_hash(column)
    return h


def bucket_ids(table: pa.Table, columns: Sequence[str], buckets: int) -> npt.NDArray[np.int32]:
    """The bucket of each row: ``(hash & Integer.MAX_VALUE) % buckets``."""
    if buckets <= 0:
        raise InvalidInputError(f"bucket count must be positive, got {buckets}")
    hashes = row_hashes(table, columns)
    hashes &= np.uint32(0x7FFFFFFF)
    np.remainder(hashes, np.uint32(buckets), out=hashes)
    out: npt.NDArray[np.int32] = hashes.view(np.int32)  # below 2**31: the same values
    return out


#: at most this many value combinations are hashed to find a statement's buckets
MAX_PINNED_COMBINATIONS = 1024


def buckets_of_values(pinned: Mapping[str, Sequence[pa.Scalar]], columns: Sequence[pa.Field],
                      buckets: int) -> set[int] | None:
    """The buckets a row can be in when each bucket column (``columns``) holds one of its
    ``pinned`` values (keyed by lower-cased name), or None when that does not narrow it: a
    bucket column not pinned, a value of another kind than its column (only integers for
    integer columns and strings for string columns are taken: there SQL's equality is the
    value's equality, so the value hashes as the row's does), or too many combinations."""
    values: list[list[pa.Scalar]] = []
    for field in columns:
        given = pinned.get(field.name.lower())
        if not given:
            return None
        t = field.type
        if pa.types.is_integer(t):
            if not all(pa.types.is_integer(v.type) for v in given):
                return None
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            if not all(pa.types.is_string(v.type) for v in given):
                return None
        else:
            return None
        # a value outside the column's range matches no row (and has no bucket)
        fits = [v for v in given if _fits(v, t)]
        values.append(fits)
    combinations = 1
    for options in values:
        combinations *= len(options)
    if combinations > MAX_PINNED_COMBINATIONS:
        return None
    if combinations == 0:
        return set()
    grids = np.meshgrid(*[np.arange(len(options)) for options in values], indexing="ij")
    table = pa.table({field.name: pa.array([options[int(i)].as_py() for i in grid.ravel()],
                                           field.type)
                      for field, options, grid in zip(columns, values, grids, strict=True)})
    return {int(b) for b in bucket_ids(table, [f.name for f in columns], buckets)}


def _fits(value: pa.Scalar, target: pa.DataType) -> bool:
    try:
        value.cast(target)
    except (pa.ArrowInvalid, OverflowError):
        return False
    return True
