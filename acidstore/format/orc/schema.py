"""Hive's ACID event schema (spec §3.1) mapped to Arrow.

Every row of a full-ACID ORC file is an *event*: six top-level fields in a fixed order, the last
of which (``row``) holds the user columns. Hive recognises the layout by the top-level field
names, case-insensitively, so files written by other engines (all lower case) are ACID too.
Files written by Hive itself often name the user fields ``_col0.._colN``; those are matched to
the table schema by position, as Hive does.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from acidstore.errors import DataError, SchemaMismatchError

__all__ = [
    "ACID_FIELDS",
    "BUCKET",
    "CURRENT_TRANSACTION",
    "DELETE",
    "DROPPED_PREFIX",
    "INSERT",
    "KEY_FIELDS",
    "OPERATION",
    "ORIGINAL_TRANSACTION",
    "ROW",
    "ROW_ID",
    "RESERVED_PREFIX",
    "SCHEMA_NOTE",
    "ROW_ID_COLUMN",
    "ROW_ID_TYPE",
    "UPDATE",
    "acid_field_names",
    "cast_to",
    "dropped_name",
    "event_schema",
    "is_acid_schema",
    "is_dropped",
    "live_columns",
    "row_struct",
]

OPERATION = "operation"
ORIGINAL_TRANSACTION = "originalTransaction"
BUCKET = "bucket"
ROW_ID = "rowId"
CURRENT_TRANSACTION = "currentTransaction"
ROW = "row"

#: The top-level field names, in file order.
ACID_FIELDS: tuple[str, ...] = (
    OPERATION, ORIGINAL_TRANSACTION, BUCKET, ROW_ID, CURRENT_TRANSACTION, ROW,
)
#: The fields of the sort key / ROW__ID, in key order.
KEY_FIELDS: tuple[str, str, str] = (ORIGINAL_TRANSACTION, BUCKET, ROW_ID)

INSERT = 0
UPDATE = 1
DELETE = 2

#: The name of the optional row-id column of a read, and its type (the public read API).
ROW_ID_COLUMN = "row__id"
#: prefix of the working columns acidstore adds while it joins and evaluates (MERGE, SET):
#: no table column may start with it
RESERVED_PREFIX = "__acid"
#: a dropped column (``Table.drop_columns``) keeps its place in the files' ``row`` struct,
#: under this prefix and its position: ORC maps row fields by position, so the columns after
#: it stay where old files have them, and a column re-added later under the old name is
#: appended at a new position, which old files do not reach (no resurrection of old values)
DROPPED_PREFIX = RESERVED_PREFIX + "_dropped_"
#: the prefix of the field metadata keys acidstore notes on a file schema's fields (a dropped
#: column's name, a renamed column's former names: files written before hold those names)
SCHEMA_NOTE = b"acidstore."
ROW_ID_TYPE = pa.struct([
    pa.field("writeid", pa.int64()),
    pa.field("bucketid", pa.int32()),
    pa.field("rowid", pa.int64()),
])

_ACID_TYPES: tuple[pa.DataType, ...] = (
    pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int64(),
)
_ACID_LOWER = [name.lower() for name in ACID_FIELDS]


def dropped_name(position: int) -> str:
    """The name a dropped column has in the table's file schema at ``position``."""
    return f"{DROPPED_PREFIX}{position}"


def is_dropped(name: str) -> bool:
    """Whether ``name`` is a dropped column's placeholder in a file schema."""
    return name.startswith(DROPPED_PREFIX)


def live_columns(file_schema: pa.Schema) -> pa.Schema:
    """The user columns of a file schema: every field but the dropped ones, in order, without
    the notes acidstore keeps on them (``SCHEMA_NOTE``)."""
    def noted(field: pa.Field) -> bool:
        return any(k.startswith(SCHEMA_NOTE) for k in (field.metadata or {}))

    if not any(is_dropped(f.name) or noted(f) for f in file_schema):
        return file_schema
    return pa.schema([_without_notes(f) if noted(f) else f
                      for f in file_schema if not is_dropped(f.name)])


def _without_notes(field: pa.Field) -> pa.Field:
    kept = {k: v for k, v in (field.metadata or {}).items() if not k.startswith(SCHEMA_NOTE)}
    return field.with_metadata(kept) if kept else field.remove_metadata()


def row_struct(schema: pa.Schema | Sequence[pa.Field]) -> pa.StructType:
    """The ``row`` struct type holding the user columns of ``schema``."""
    return pa.struct(list(schema))


def event_schema(user_schema: pa.Schema | Sequence[pa.Field]) -> pa.Schema:
    """The ORC file schema of an ACID event file whose user columns are ``user_schema``."""
    fields = [pa.field(name, typ) for name, typ in zip(ACID_FIELDS[:5], _ACID_TYPES, strict=True)]
    fields.append(pa.field(ROW, row_struct(user_schema)))
    return pa.schema(fields)


def acid_field_names(schema: pa.Schema) -> dict[str, str] | None:
    """Map canonical ACID field names to the names used in ``schema``, or ``None`` if the
    schema is not an ACID event schema.

    Matching is by name, case-insensitively and in order (as Hive's ``OrcInputFormat#isOriginal``
    decides it); the types must then be the event types, otherwise the file is corrupt rather
    than "original", and that is reported instead of guessed.
    """
    # names and types as two lists: every field of a pa.Schema taken on its own is a new
    # wrapper object, and a scan asks this of every file it opens (250 after W2-W4)
    names = schema.names
    if len(names) != len(ACID_FIELDS):
        return None
    if [name.lower() for name in names] != _ACID_LOWER:
        return None
    types = schema.types
    for name, typ, want in zip(names, types, _ACID_TYPES, strict=False):
        if typ != want:
            raise DataError(f"ACID field {name!r} has type {typ}, expected {want}")
    if not pa.types.is_struct(types[5]):
        raise DataError(f"ACID field {names[5]!r} is {types[5]}, not a struct")
    return dict(zip(ACID_FIELDS, names, strict=True))


def is_acid_schema(schema: pa.Schema) -> bool:
    """True when the file holds ACID events rather than plain ("original") rows."""
    return acid_field_names(schema) is not None


def cast_to(array: pa.Array | pa.ChunkedArray, target: pa.DataType, what: str
            ) -> pa.Array | pa.ChunkedArray:
    """``array`` as ``target`` without loss of values, or a SchemaMismatchError that starts with
    ``what`` (the caller says which column, file or expression it is)."""
    if array.type == target:
        return array
    try:
        if pa.types.is_integer(array.type) and pa.types.is_decimal128(target):
            # Arrow casts an integer type to a decimal only if every value of the type
            # would fit (int64 needs precision 19 plus the scale): widen first, then let
            # the safe cast check the values themselves, as 5 fits decimal(10,2)
            array = pc.cast(array, pa.decimal128(38, target.scale), safe=True)
        cast = pc.cast(array, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatchError(f"{what} ({exc})") from exc
    if pa.types.is_float32(target) and (pa.types.is_float64(array.type)
                                        or pa.types.is_decimal(array.type)):
        # Arrow's safe cast turns a finite value beyond float32's range into infinity
        # (1e39 -> inf) where SQL (DuckDB, Spark's ANSI cast) refuses it as out of range
        overflowed = pc.fill_null(pc.and_(pc.is_inf(cast), pc.is_finite(
            pc.cast(array, pa.float64()))), False)
        if pc.any(overflowed).as_py():
            first = pc.filter(array, overflowed)[0].as_py()
            raise SchemaMismatchError(f"{what} ({first!r} is out of range for {target})")
    if pa.types.is_floating(array.type) and pa.types.is_decimal(target):
        # Arrow's safe cast rounds a double to the decimal's scale (0.129 -> 0.13): keep only
        # values that are the double closest to their decimal, as 0.1 is to 0.10
        back = pc.cast(cast, pa.float64())
        changed = pc.fill_null(pc.not_equal(back, pc.cast(array, pa.float64())), False)
        if pc.any(changed).as_py():
            first = pc.filter(array, changed)[0].as_py()
            raise SchemaMismatchError(
                f"{what} ({first!r} does not fit {target} without rounding)")
    return cast
