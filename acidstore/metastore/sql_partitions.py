"""The record of many partitions of one table in one query each (layer L2): what
``History.compaction_outputs_by_partition`` and ``History.committed_components_by_partition``
return on SQL.

A read of many partitions planned from the record (``read.record_plan``) asked two queries a
partition, each a round trip to a PostgreSQL server (a full read of 1,000 partitions: 2,000
of them, 8,000 statements with their transactions and table lookups). Here each kind is one
statement whatever the number of partitions, and each still reads only the index range a
per-partition query reads:

- outputs: ``part`` in a list bound as *one* parameter (``Dialect.in_list``), found through
  ``compaction_outputs_by_partition`` (table, partition);
- components: the ``(partition, floor)`` pairs (a JSON object in SQLite, two arrays in
  PostgreSQL) each probing ``components_by_write`` (table, partition, write id) for one
  range, from its floor up, so a partition's writes below its selected base are never read
  (which is why each partition has a floor of its own, and one common floor, the lowest,
  would not do).

The values are always bound, never formatted into the SQL, and the SQL text is the same for
any number of partitions (one entry of the driver's statement cache).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from acidstore.errors import InvalidInputError
from acidstore.metastore import sql_txn as txns
from acidstore.metastore.records import CompactionOutput, WriteComponent
from acidstore.metastore.sql import Session

__all__ = ["checked_floors", "checked_partitions", "components_by_partition", "output_of",
           "outputs_by_partition"]


def checked_partitions(partitions: Iterable[str]) -> list[str]:
    """The partitions asked for, once each in their order; refused unless each is a string
    (a lone string would otherwise be read as its characters)."""
    if isinstance(partitions, str):
        raise InvalidInputError(f"partitions is a list of partitions, not the string "
                                f"{partitions!r}")
    wanted = list(dict.fromkeys(partitions))
    if any(not isinstance(part, str) for part in wanted):
        raise InvalidInputError(f"partitions must be strings, got {wanted!r}")
    return wanted


def checked_floors(floors: Mapping[str, int]) -> dict[str, int]:
    """``floors`` as a dict, refused unless it maps strings to non-negative ints."""
    if not isinstance(floors, Mapping):
        raise InvalidInputError(f"floors maps each partition to a write id, got {floors!r}")
    wanted = dict(floors)
    if any(not isinstance(part, str) or isinstance(low, bool) or not isinstance(low, int)
           or low < 0 for part, low in wanted.items()):
        raise InvalidInputError(f"floors must map partitions (strings) to write ids (ints "
                                f"of at least 0), got {wanted!r}")
    return wanted


def output_of(table: str, row: Any) -> CompactionOutput:
    """A stored ``compaction_outputs`` row read back, ``table`` its qualified name."""
    return CompactionOutput(table, row["part"], row["directory"], row["files"],
                            row["rows_written"], row["bytes"],
                            tuple(json.loads(row["file_rows"]).items()), row["txn_id"])


def outputs_by_partition(conn: Session, table: Any, partitions: Sequence[str]
                         ) -> dict[str, list[CompactionOutput]]:
    """The committed compactions' outputs in each of ``partitions`` of ``table`` (its
    ``tables`` row), in the order ``compaction_outputs`` gives them (txn, directory)."""
    name = f"{table['db_name']}.{table['name']}"
    found: dict[str, list[CompactionOutput]] = {part: [] for part in partitions}
    rows = conn.execute(
        "SELECT o.* FROM compaction_outputs o JOIN txns t ON t.txn_id = o.txn_id "
        f"WHERE o.table_id = ? AND {conn.dialect.in_list('o.part')} AND "
        "t.state = 'committed' ORDER BY o.txn_id, o.directory",
        (table["table_id"], conn.dialect.list_parameter(list(found))))
    for row in rows:
        found[row["part"]].append(output_of(name, row))
    return found


def components_by_partition(conn: Session, table_id: int, floors: Mapping[str, int]
                            ) -> dict[str, list[WriteComponent]]:
    """The committed components of each partition of ``floors`` with a write id at least its
    floor, in the order ``committed_components`` gives them (txn, then component id)."""
    if conn.dialect.array_parameters:
        rows = conn.execute(_POSTGRES_PAIRS, (list(floors), list(floors.values()), table_id))
    else:
        rows = conn.execute(_SQLITE_PAIRS, (json.dumps(dict(floors)), table_id))
    found: dict[str, list[WriteComponent]] = {part: [] for part in floors}
    # sorted here, not by the query: an ORDER BY may steer SQLite to another index
    for row in sorted(rows.fetchall(), key=lambda row: (row["txn_id"], row["component_id"])):
        found[row["part"]].append(txns.component_of(row))
    return found


# The (partition, floor) pairs drive the query, each probing ``components_by_write`` for one
# range, (table, partition, write id >= floor). The one statement the engines need apart
# (SQLite has no arrays nor LATERAL, PostgreSQL no json_each), so both are spelled out here.
#: SQLite: the pairs as a JSON object; CROSS JOIN fixes the join order (pairs, components,
#: txns) and the unary + keeps it off the state index (every txn of the store)
_SQLITE_PAIRS = (
    "SELECT c.* FROM json_each(?) f CROSS JOIN components c ON c.table_id = ? AND "
    "c.part = f.key AND c.write_id >= f.value CROSS JOIN txns t ON t.txn_id = c.txn_id "
    "WHERE +t.state = 'committed'")
#: PostgreSQL: the pairs as two arrays. A plain join lets the planner, which cannot tell
#: how selective each floor is, hash every component of the table (of the store, when its
#: history is long) against them; the LATERAL subquery (kept one by OFFSET 0) is run once a
#: pair, as an index scan of that pair's range
_POSTGRES_PAIRS = (
    "SELECT c.* FROM unnest(?::text[], ?::bigint[]) AS f(key, value) CROSS JOIN LATERAL "
    "(SELECT * FROM components WHERE table_id = ? AND part = f.key AND write_id >= f.value "
    "OFFSET 0) c JOIN txns t ON t.txn_id = c.txn_id WHERE t.state = 'committed'")
