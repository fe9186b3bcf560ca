"""Which task of the shuffled MERGE by bucket gets which rows: keys that spread Spark's hash
partitioning over the tasks one share each.

``repartition(n, key)`` sends a row to partition ``pmod(hash(key), n)`` (Spark's Murmur3 of
the key, seed 42). Tagging each row with its task's number would leave the balance to that
hash: two tasks' shares can land in one partition, and one core then idles while the other
runs both. Tagging it instead with a key that hashes to the task's own partition gives every
task exactly its share.
"""

from __future__ import annotations

__all__ = ["partition_keys", "spark_hash_int"]

_MASK = 0xFFFFFFFF
#: Spark's seed of ``hash`` and of its ``HashPartitioning``
_SPARK_SEED = 42


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def spark_hash_int(value: int, seed: int = _SPARK_SEED) -> int:
    """Spark's ``Murmur3_x86_32.hashInt`` (signed), as ``hash`` of an int column and its
    hash partitioning compute it."""
    k = _rotl((value * 0xCC9E2D51) & _MASK, 15) * 0x1B873593 & _MASK
    h = (_rotl((seed & _MASK) ^ k, 13) * 5 + 0xE6546B64) & _MASK
    h ^= 4
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & _MASK
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_keys(count: int) -> list[int]:
    """For each ``i < count``, the least integer that Spark's hash partitioning into ``count``
    partitions sends to partition ``i`` (``pmod(hash(key), count)``, its ``HashPartitioning``
    of an int column), so that ``repartition(count, key)`` gives each task its own share.
    Which task runs which share does not matter for what is written (a task runs the shares
    of the keys it receives); only the balance depends on it."""
    found: dict[int, int] = {}
    key = 0
    while len(found) < count:
        found.setdefault(spark_hash_int(key) % count, key)
        key += 1
    return [found[i] for i in range(count)]
