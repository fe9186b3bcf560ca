"""The partitions a filter pins by equality, named without asking for the table's others.

A read planned from the metastore's record (``read.record_plan``) needs the table's
partitions before it prunes them: asking the metastore for all of them, then evaluating the
filter over each, costs a read of one partition of a table of 10,000 partitions ten
thousand rows and evaluations. When the filter's AND terms pin every partition column to
literals (``p = 7``, ``dt IN ('a', 'b') AND p = 7``), the partitions it can read are known
from the text alone, spelled as writers spell them (``write.conform``): those are planned,
and one the table does not have plans to nothing.

Only columns whose directory spelling is the literal's own are pinned this way: integers by
integer literals, strings by string literals. Anything else (a date compared with a string,
a float, an integer column compared with text) could match a row whose directory is spelled
otherwise, so it falls back to all partitions.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pyarrow as pa

from acidstore.config import PINNED_PARTITIONS_MAX
from acidstore.errors import InvalidPartitionValueError
from acidstore.format.partitions import partition_path
from acidstore.sql.expressions import Predicate
from acidstore.sql.predicate_terms import equality_literals
from acidstore.write.conform import canonical_partition_values

__all__ = ["pinned_partitions"]


def _spelled_as_is(column: pa.DataType, literal: pa.Scalar) -> bool:
    if pa.types.is_integer(column):
        return bool(pa.types.is_integer(literal.type))
    if pa.types.is_string(column) or pa.types.is_large_string(column):
        return bool(pa.types.is_string(literal.type) or pa.types.is_large_string(literal.type))
    return False


def pinned_partitions(partition_schema: pa.Schema, filter: Predicate | None
                      ) -> list[str] | None:
    """The relative paths of the partitions ``filter`` can read (a value a column cannot
    hold matches none), or None when it does not pin every partition column."""
    names: Sequence[str] = partition_schema.names
    if not isinstance(filter, str) or not names:
        return None
    pins = equality_literals(filter)
    choices: list[list[pa.Scalar]] = []
    for field in partition_schema:
        values = pins.get(field.name.lower())
        if values is None or not all(_spelled_as_is(field.type, v) for v in values):
            return None
        choices.append(values)
    if math.prod(len(c) for c in choices) > PINNED_PARTITIONS_MAX:
        return None
    found: list[str] = []
    for combination in itertools.product(*choices):
        try:
            spelled = canonical_partition_values(partition_schema, names,
                                                 [v.as_py() for v in combination],
                                                 where="filter")
            path = partition_path(names, spelled)
        except InvalidPartitionValueError:
            continue  # no row of the column holds it (no directory could): none matches
        if path not in found:
            found.append(path)
    return sorted(found, key=lambda p: p.split("/"))
