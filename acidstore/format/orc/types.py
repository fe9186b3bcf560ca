"""Arrow types as Hive column types: which a table may declare, and which data may be cast to.

A table's files must be readable by Hive and Spark, so a column's Arrow type must name a Hive
type and ORC must store it and give the same values back. pyarrow's ORC writer has no encoding
for unsigned integers, half floats, times of day, durations, intervals, ``null``, dictionaries,
views, run-end encoding or decimals other than ``decimal128``; it would accept a union or
``date64`` but Hive reads neither back as declared (a ``date64`` is stored as a timestamp).
A table that declared one could never be written again, so the schema is refused where it is
set (``Catalog.create_table`` / ``add_columns``, which every path goes through).
"""

from __future__ import annotations

from typing import NoReturn

import pyarrow as pa

from acidstore.errors import InvalidInputError, SchemaMismatchError
from acidstore.format.orc.schema import cast_to
from acidstore.io.fs import is_text

__all__ = ["cast_input", "check_column_types", "check_partition_types", "hive_type"]

_PRIMITIVES: dict[pa.DataType, str] = {
    pa.bool_(): "boolean", pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int",
    pa.int64(): "bigint", pa.float32(): "float", pa.float64(): "double",
    pa.string(): "string", pa.large_string(): "string", pa.binary(): "binary",
    pa.large_binary(): "binary", pa.date32(): "date",
}

ALLOWED = (
    "boolean, int8/int16/int32/int64, float32/float64, decimal128 (scale 0..precision), "
    "string/large_string, binary/large_binary/fixed_size_binary, date32, timestamp (any unit; "
    "with a time zone it is Hive's timestamp with local time zone), and list/large_list/"
    "fixed_size_list, struct (with at least one field) and map (with a primitive key) of these")
PARTITION_ALLOWED = ("boolean, int8/int16/int32/int64, float32/float64, decimal128, "
                     "string/large_string, date32 or timestamp")

_HINTS: tuple[tuple[str, str], ...] = (
    ("is_unsigned_integer", "; ORC's integers are signed: use the signed type one size up"),
    ("is_dictionary", "; decode it first (cast it to its value type)"),
    ("is_date64", "; use date32 (ORC would store a date64 as a timestamp)"),
    ("is_null", "; the column needs a type (pyarrow's null is none), e.g. one whose every "
                "value was None: give a pyarrow Schema"),
)


def hive_type(kind: pa.DataType, column: str, where: str) -> str:
    """The Hive type that stores ``kind`` in ORC, or an InvalidInputError naming ``column``
    of ``where`` (a dotted path, ``column.field``, where a nested field is the one without a
    Hive type)."""
    primitive = _primitive(kind)
    if primitive is not None:
        return primitive
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) \
            or pa.types.is_fixed_size_list(kind):
        item = hive_type(kind.value_type, f"{column}.{kind.value_field.name}", where)
        return f"array<{item}>"
    if pa.types.is_map(kind):
        key = hive_type(kind.key_type, f"{column}.key", where)
        if _primitive(kind.key_type) is None:
            _refuse(kind, column, where, "; Hive's map keys are primitive types")
        return f"map<{key},{hive_type(kind.item_type, f'{column}.value', where)}>"
    if pa.types.is_struct(kind) and kind.num_fields:
        fields = [kind.field(i) for i in range(kind.num_fields)]
        return "struct<" + ",".join(
            f"{f.name}:{hive_type(f.type, f'{column}.{f.name}', where)}" for f in fields) + ">"
    hint = next((text for test, text in _HINTS if getattr(pa.types, test)(kind)), "")
    return _refuse(kind, column, where, hint)


def _primitive(kind: pa.DataType) -> str | None:
    """The Hive name of a primitive type ORC round-trips, or None."""
    if pa.types.is_timestamp(kind):
        return "timestamp" if kind.tz is None else "timestamp with local time zone"
    if pa.types.is_decimal128(kind) and 0 <= kind.scale <= kind.precision:
        return f"decimal({kind.precision},{kind.scale})"
    if pa.types.is_fixed_size_binary(kind) and not pa.types.is_decimal(kind):
        return "binary"
    return _PRIMITIVES.get(kind)


def _refuse(kind: pa.DataType, column: str, where: str, hint: str) -> NoReturn:
    raise InvalidInputError(f"column {column!r} of {where} has type {kind}, which no Hive type "
                            f"stores in ORC{hint}. Column types may be {ALLOWED}")


def check_column_types(schema: pa.Schema, table: str) -> None:
    """Refuse a schema with any column (or nested field) that has no Hive type, or whose
    name is no valid text (a lone surrogate: ORC's schema and the metastore hold UTF-8)."""
    for field in schema:
        _check_names(field, field.name, table)
        hive_type(field.type, field.name, table)


def _check_names(field: pa.Field, path: str, table: str) -> None:
    if not is_text(field.name):
        raise InvalidInputError(f"column {path!r} of {table} has a name that is no valid "
                                "text (it holds a lone surrogate)")
    kind = field.type
    children = [kind.field(i) for i in range(kind.num_fields)] if pa.types.is_struct(kind) \
        else [kind.value_field] if pa.types.is_list(kind) or pa.types.is_large_list(kind) \
        or pa.types.is_fixed_size_list(kind) \
        else [kind.key_field, kind.item_field] if pa.types.is_map(kind) else []
    for child in children:
        _check_names(child, f"{path}.{child.name}", table)


def check_partition_types(schema: pa.Schema, table: str) -> None:
    """Refuse partition columns whose values cannot be a directory name (``col=value``) and
    be parsed back: nested types (Hive's partition keys are primitive) and binary (bytes that
    are no UTF-8 text make no name)."""
    for field in schema:
        hive = hive_type(field.type, field.name, table)
        if _primitive(field.type) is None or hive == "binary":
            raise InvalidInputError(
                f"partition column {field.name!r} of {table} has type {field.type}: its values "
                f"become directory names ({field.name}=value), so a partition column may be "
                f"{PARTITION_ALLOWED}")


def _family(kind: pa.DataType) -> str:
    """The kind of value ``kind`` holds, as far as implicit casts are concerned."""
    if pa.types.is_dictionary(kind):
        return _family(kind.value_type)
    for family, tests in _FAMILIES:
        if any(getattr(pa.types, test)(kind) for test in tests):
            return family
    return str(kind)  # anything else converts only to itself


_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("null", ("is_null",)),
    ("number", ("is_integer", "is_floating", "is_decimal")),
    ("boolean", ("is_boolean",)),
    ("text", ("is_string", "is_large_string", "is_string_view")),
    ("bytes", ("is_binary", "is_large_binary", "is_fixed_size_binary", "is_binary_view")),
    ("date", ("is_date",)),
    ("timestamp", ("is_timestamp",)),
    ("list", ("is_list", "is_large_list", "is_fixed_size_list", "is_list_view",
              "is_large_list_view")),
    ("struct", ("is_struct",)),
    ("map", ("is_map",)),
)

#: target family -> the source families whose values keep their meaning in it (the cast then
#: checks each value: overflow, truncation, text that does not parse). Text parses into any
#: primitive (SQL's literals, SET 'a string'); numbers never become times or booleans: 5 as
#: a timestamp is 5 microseconds after 1970, not a time anyone meant; a timestamp as a date
#: would drop its time of day.
_KEEPS_MEANING: dict[str, frozenset[str]] = {
    "number": frozenset({"number", "text"}),
    "boolean": frozenset({"boolean", "text"}),
    "text": frozenset({"text", "bytes", "number", "boolean", "date", "timestamp"}),
    "bytes": frozenset({"bytes", "text"}),
    "date": frozenset({"date", "text"}),
    "timestamp": frozenset({"timestamp", "date", "text"}),
}


def cast_input(array: pa.Array | pa.ChunkedArray, target: pa.DataType, what: str
               ) -> pa.Array | pa.ChunkedArray:
    """A caller's values (rows to insert, SET values) as ``target``: ``cast_to``'s check that
    each value fits, after refusing casts that would change what the values mean
    (SchemaMismatchError starting with ``what``; nested types are checked field by field).
    Not for stored files, which their own table's writer typed."""
    if not _meaning_kept(array.type, target):
        raise SchemaMismatchError(
            f"{what}: {array.type} does not convert to {target} without changing what the "
            "values mean; convert them explicitly first")
    return cast_to(array, target, what)


def _meaning_kept(given: pa.DataType, target: pa.DataType) -> bool:
    if pa.types.is_dictionary(given):
        given = given.value_type
    source, wanted = _family(given), _family(target)
    if given == target or source == "null":
        return True
    if source != wanted:
        return source in _KEEPS_MEANING.get(wanted, frozenset())
    if wanted == "list":
        return _meaning_kept(given.value_type, target.value_type)
    if wanted == "map":
        return _meaning_kept(given.key_type, target.key_type) \
            and _meaning_kept(given.item_type, target.item_type)
    if wanted == "struct":
        fields = {given.field(i).name.lower(): given.field(i).type
                  for i in range(given.num_fields)}
        return all(_meaning_kept(fields[f.name.lower()], f.type)
                   for f in target if f.name.lower() in fields)
    return True
