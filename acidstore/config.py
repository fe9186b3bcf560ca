"""Every knob of acidstore, in one place: thread counts, cache sizes, flushing, lease and
timeout defaults, the environment variables it reads, Spark conf keys and table-property keys.

Modules take their defaults from here rather than spelling numbers and names of their own, so
that one page answers "what can be tuned, and what is it now?". Values are plain constants,
read once at import; a caller that wants another value for one call passes it where the API
takes one (``connect(txn_timeout=...)``, ``Cleaner(retention_seconds=...)``...).

This is layer 0: it imports nothing of acidstore, so every layer may import it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

__all__ = [
    "ABORTED_AGE_THRESHOLD_PROPERTY",
    "ABORTED_AGE_THRESHOLD_SECONDS",
    "ABORTED_NUM_THRESHOLD",
    "ABORTED_NUM_THRESHOLD_PROPERTY",
    "BUSY_TIMEOUT_SECONDS",
    "CLEANER_IN_FLIGHT_WAIT_SECONDS",
    "COMPACTION_STALE_SECONDS",
    "COMPACTOR_THRESHOLD_PREFIX",
    "CONNECT_TIMEOUT_SECONDS",
    "CPU_CORES",
    "DECODED_SETS_PER_FILE",
    "DELETE_EVENT_LIMIT",
    "DELTA_NUM_THRESHOLD",
    "DELTA_NUM_THRESHOLD_PROPERTY",
    "DELTA_PCT_THRESHOLD",
    "DELTA_PCT_THRESHOLD_PROPERTY",
    "DIRECTORY_FACTS_KEPT",
    "FILE_CACHE_BYTES",
    "FLUSH_COMMITS",
    "FLUSH_ENV",
    "FLUSH_THREADS",
    "HEARTBEAT_INTERVAL_SECONDS",
    "HELD_FILE_MAX_BYTES",
    "ISOLATION_LEVEL",
    "ISOLATION_LEVEL_PROPERTY",
    "JAVA_HOME_ENV",
    "JVM_CACHE_ENV",
    "LEASE_TTL_SECONDS",
    "LOCAL_THREADS",
    "MAX_LOCAL_THREADS",
    "METASTORE_ENV",
    "NO_AUTO_COMPACTION_PROPERTIES",
    "ORC_COMPRESSION",
    "ORC_COMPRESS_PROPERTY",
    "PARSED_NAMES_KEPT",
    "PARTITION_DIRS_KEPT",
    "PINNED_PARTITIONS_MAX",
    "PLANNED_DIRECTORIES_KEPT",
    "PLANNED_PARTITIONS_KEPT",
    "PREDICATE_TEXTS_KEPT",
    "RECORD_COMPONENTS_KEPT",
    "RECORD_DERIVED_KEPT",
    "RETENTION_SECONDS",
    "SPLIT_MEMOS_KEPT",
    "SETTLE_NS",
    "SPARK_DML_IN_DRIVER_CONF",
    "SPARK_HEARTBEAT_SECONDS",
    "SPARK_JVM_READ_CONF",
    "SPARK_LEASE_SECONDS",
    "SPARK_MASTER_ENV",
    "SPARK_MERGE_MAX_SOURCE_BYTES",
    "SPARK_MERGE_MAX_SOURCE_BYTES_CONF",
    "SPARK_NATIVE_READ_CONF",
    "SPARK_PARTITION_BYTES",
    "SPARK_SETTLE_WAIT_SECONDS",
    "TRANSACTIONAL_PROPERTY",
    "TXN_TIMEOUT_SECONDS",
    "WAREHOUSE_ENV",
    "WRITE_NAMES_KEPT",
    "XDG_CACHE_HOME_ENV",
    "environment",
]


# --- the environment ------------------------------------------------------------------------


def environment(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of the environment variable ``name``, None when it is unset or empty.

    acidstore reads its environment through this function only, so the variables below are
    all it honours. ``environ``: a mapping to read instead of the process's (tests pass one).
    """
    value = (os.environ if environ is None else environ).get(name)
    return value or None


FLUSH_ENV: Final = "ACIDSTORE_FLUSH"
"""``0`` turns off flushing commits to disk in every process that imports acidstore with it
set (a test run sets it for the processes it starts); unset or anything else leaves it on."""

WAREHOUSE_ENV: Final = "ACIDSTORE_WAREHOUSE"
"""The warehouse location a client opens when it is given none (the command line's default)."""

METASTORE_ENV: Final = "ACIDSTORE_METASTORE"
"""The metastore URL a client opens when it is given none (unset: the SQLite file inside the
warehouse)."""

JVM_CACHE_ENV: Final = "ACIDSTORE_JVM_CACHE"
"""The directory where the Spark data source's compiled jar is kept (unset: under
``XDG_CACHE_HOME_ENV``)."""

JAVA_HOME_ENV: Final = "JAVA_HOME"
"""The JDK whose ``bin/javac`` compiles the Spark data source's jar when the package carries
none for the installed PySpark; looked at before ``PATH``, as Java's own tools do."""

XDG_CACHE_HOME_ENV: Final = "XDG_CACHE_HOME"
"""The user's cache directory (unset: ``~/.cache``); the jar goes to ``acidstore/jvm`` in it."""

SPARK_MASTER_ENV: Final = "SPARK_MASTER"
"""The Spark master of ``acidstore demo`` when ``--master`` is not given (unset: ``local[*]``)."""


# --- threads ----------------------------------------------------------------------------------

CPU_CORES: Final = os.cpu_count() or 1
"""Cores of this machine, as the operating system reports them (1 when it cannot tell): a
Spark read's default ``minPartitions``, and the task slots of ``local[*]``."""

MAX_LOCAL_THREADS: Final = 4
"""Threads, at most, of one piece of local work: a statement's units, a scan's files, a bulk
insert's bucket files, a local compaction's buckets (pyarrow and DuckDB release the GIL while
they decode, evaluate and encode)."""

LOCAL_THREADS: Final = min(MAX_LOCAL_THREADS, CPU_CORES)
"""Threads local work runs on by default: one per core, at most ``MAX_LOCAL_THREADS``."""

FLUSH_THREADS: Final = 8
"""Flushes (fsync) of one commit in flight at once, a number of threads (a one-row statement
has 4-7; a commit of many directories queues the rest)."""


# --- flushing ---------------------------------------------------------------------------------

FLUSH_COMMITS: Final = (environment(FLUSH_ENV) or "1").strip() != "0"
"""Whether a commit flushes its files and directories to disk before the metastore commits,
so a power loss cannot lose committed rows (``acidstore.io.durable.set_flush`` changes it for
a process; ``FLUSH_ENV`` sets it for every process)."""


# --- caches (per process) ---------------------------------------------------------------------

FILE_CACHE_BYTES: Final = 64 << 20
"""Bytes that the caches of unchanged files may hold together: listings, small files, their
decoded stripes (``acidstore.io.immutable``; ``set_cache_bytes`` changes it)."""

SETTLE_NS: Final = 100_000_000
"""Nanoseconds after its last change that a file or directory is trusted not to change unseen,
so that it may be cached (far more than any filesystem timestamp tick)."""

HELD_FILE_MAX_BYTES: Final = 1 << 20
"""Bytes, at most, of an ORC file kept in memory once read (a one-row file is about 1.5 KB,
an UPDATE's few hundred rows some tens of KB; a large base file would crowd the rest out)."""

DECODED_SETS_PER_FILE: Final = 8
"""Decoded column sets kept per held file, a count (a statement asks for two or three)."""

PARSED_NAMES_KEPT: Final = 16384
"""Parsed directory and bucket file names kept, a count per kind of name. A statement on a
table of N directories parses each name several times; a one-row DELETE among 80 deltas
spent about a fifth of its CPU on it before names were kept."""

PARTITION_DIRS_KEPT: Final = 1 << 16
"""Recorded partitions whose directories and values are kept parsed, a count: a read planned
from the metastore's record asks for every partition of the table before it prunes them."""

PINNED_PARTITIONS_MAX: Final = 64
"""Partitions, at most, a read names from the literals its filter pins the partition columns
to (``p IN (1, 2) AND dt = 'a'``); with more it asks the metastore for all of them."""

PREDICATE_TEXTS_KEPT: Final = 256
"""Predicate texts whose tokens, compiled form and integer ranges are kept, a count. One
statement takes its predicate apart in its planning scan, its unit's scan, its bucket pruning
and its stripe bounds."""

DIRECTORY_FACTS_KEPT: Final = 4096
"""Directories whose facts derived from a listing (bucket files, their sizes, original files)
are kept, a count; beyond it all are dropped at once (a few MB at most)."""

RECORD_COMPONENTS_KEPT: Final = 200_000
"""Committed components (written directories) of one table kept between reads, a count; a
table with more is loaded from the metastore for every read."""

RECORD_DERIVED_KEPT: Final = 8
"""Values derived from one table's kept components, a count (a scan's partitions may ask at a
few snapshot floors)."""

PLANNED_PARTITIONS_KEPT: Final = 1024
"""Partitions whose plan from the record (recorded directories, selected state) a process
keeps between statements, per metastore, a count (``read.plan_memory``); beyond it the
longest kept is dropped. A statement then plans only the commits since the last one."""

PLANNED_DIRECTORIES_KEPT: Final = 100_000
"""Recorded directories of one partition beyond which its plan is not kept, a count (a few
hundred bytes each): a partition with more is planned from scratch by every statement."""

SPLIT_MEMOS_KEPT: Final = 16
"""Split plans one line of a partition's kept plans holds, by the bucket ids a statement
pinned, a count (``read.record_plan``): a one-row statement pins its row's bucket, so as
many as the table has buckets are asked for in turn."""

WRITE_NAMES_KEPT: Final = 1 << 16
"""Recorded writes whose directory names and bucket files per directory are kept worked out,
a count: every statement checks its partition's whole record, the same writes each time."""

DELETE_EVENT_LIMIT: Final = 10_000_000
"""Valid delete events the vectorized reader loads into its in-memory registry for one split,
a count (at most 24 bytes each; Hive's ``hive.transactional.events.mem``). Beyond it the read
falls back to the streaming merge, whose memory does not grow with the deletes."""


# --- leases and timeouts ----------------------------------------------------------------------

TXN_TIMEOUT_SECONDS: Final = 300.0
"""Seconds a transaction may go without a heartbeat before any client may abort it (Hive's
``hive.txn.timeout``); ``connect(txn_timeout=...)`` and the metastores take another."""

HEARTBEAT_INTERVAL_SECONDS: Final = TXN_TIMEOUT_SECONDS / 2
"""Seconds between an open transaction's heartbeats (spec: every timeout / 2)."""

LEASE_TTL_SECONDS: Final = 300.0
"""Seconds a reader's snapshot lease lives unless renewed; the cleaner keeps every file a
live lease may read. A reader that streams renews it after a third of that."""

SPARK_LEASE_SECONDS: Final = 3600.0
"""Seconds a Spark read's snapshot lease lives (its ``leaseSeconds`` option): a job's tasks
read long after the driver planned."""

SPARK_HEARTBEAT_SECONDS: Final = 60.0
"""Seconds between the heartbeats a Spark write task sends for the driver's transaction while
Spark feeds it (well inside ``TXN_TIMEOUT_SECONDS``)."""

SPARK_SETTLE_WAIT_SECONDS: Final = 120.0
"""Seconds a failed statement waits for its Spark jobs' remaining tasks to end before the
failure reaches the transaction (beyond it the failure propagates anyway)."""

BUSY_TIMEOUT_SECONDS: Final = 30.0
"""Seconds a metastore call waits for another client's write lock before it fails."""

CONNECT_TIMEOUT_SECONDS: Final = 10.0
"""Seconds a PostgreSQL metastore waits for a connection to its server."""

RETENTION_SECONDS: Final = 300.0
"""Seconds the cleaner keeps what a compaction or overwrite replaced after it committed, for
time travel and for readers still planning (``Table.vacuum`` and ``acidstore clean`` too)."""

CLEANER_IN_FLIGHT_WAIT_SECONDS: Final = 2.0
"""Seconds a cleaner pass waits for PostgreSQL transaction opens in flight before it leaves
what is obsolete to the next pass."""

COMPACTION_STALE_SECONDS: Final = 300.0
"""Seconds without a heartbeat after which a compaction's worker is taken for dead and its
queue entry may be claimed again."""


# --- Spark conf keys (``spark.conf.set(key, value)``) -----------------------------------------

SPARK_WAREHOUSE_CONF: Final = "spark.acidstore.warehouse"
"""The warehouse whose tables ``spark.sql`` UPDATE, DELETE and MERGE statements name (``db.table``);
unset: every statement is Spark's own."""

SPARK_METASTORE_CONF: Final = "spark.acidstore.metastore"
"""The metastore URL of ``SPARK_WAREHOUSE_CONF``'s warehouse (unset: its SQLite file, or
``ACIDSTORE_METASTORE``)."""

SPARK_JVM_READ_CONF: Final = "spark.acidstore.jvmRead"
"""``false`` turns off acidstore's own Java reader for ``AcidTable.toDF()`` (on by default,
where it can read)."""

SPARK_NATIVE_READ_CONF: Final = "spark.acidstore.nativeRead"
"""``true`` reads the event files with Spark's own ORC reader and removes deleted rows with
an anti-join (off by default)."""

SPARK_DML_IN_DRIVER_CONF: Final = "spark.acidstore.dml.inDriverOnLocal"
"""``true`` runs a statement's units on threads of the driver when the master is local,
instead of as a Spark job (off by default)."""

SPARK_MERGE_MAX_SOURCE_BYTES_CONF: Final = "spark.acidstore.merge.maxSourceBytes"
"""Estimated bytes of a MERGE source above which Spark joins it with the target (a shuffle)
instead of collecting it to the driver; its default is ``SPARK_MERGE_MAX_SOURCE_BYTES``."""

SPARK_MERGE_MAX_SOURCE_BYTES: Final = 256 << 20
"""The default of ``SPARK_MERGE_MAX_SOURCE_BYTES_CONF``, in bytes."""

SPARK_PARTITION_BYTES: Final = 128 << 20
"""Bytes of bucket files, at most, one Spark read partition is given (the read option
``maxPartitionBytes``)."""


# --- table properties (``create_table(properties={...})``) -----------------------------------

TRANSACTIONAL_PROPERTY: Final = "transactional"
"""Set to ``true`` on every table created, as Hive marks its full-ACID tables."""

ORC_COMPRESS_PROPERTY: Final = "orc.compress"
"""The codec of a table's bucket files: NONE, ZLIB, SNAPPY, LZ4 or ZSTD (Hive's key)."""

ORC_COMPRESSION: Final = "zstd"
"""The codec when a table does not set ``ORC_COMPRESS_PROPERTY``."""

ISOLATION_LEVEL_PROPERTY: Final = "acidstore.isolationLevel"
"""How strictly a table's read-modify-write statements are isolated: ``WriteSerializable``
or ``Serializable``."""

ISOLATION_LEVEL: Final = "WriteSerializable"
"""The isolation level of a table that does not set ``ISOLATION_LEVEL_PROPERTY``: only
statements that change the same rows conflict."""

NO_AUTO_COMPACTION_PROPERTIES: Final = ("no_auto_compaction", "no_auto_compact")
"""Hive's two spellings (compared lower-cased) of the property that, set to ``true``, keeps
the initiator from queueing compactions of a table."""

COMPACTOR_THRESHOLD_PREFIX: Final = "compactorthreshold."
"""Prefix of the table properties that override the initiator's thresholds for one table
(``compactorthreshold.hive.compactor.delta.num.threshold=4``)."""

DELTA_NUM_THRESHOLD_PROPERTY: Final = "hive.compactor.delta.num.threshold"
"""After ``COMPACTOR_THRESHOLD_PREFIX``: the ``DELTA_NUM_THRESHOLD`` of a table."""

DELTA_PCT_THRESHOLD_PROPERTY: Final = "hive.compactor.delta.pct.threshold"
"""After ``COMPACTOR_THRESHOLD_PREFIX``: the ``DELTA_PCT_THRESHOLD`` of a table."""

ABORTED_NUM_THRESHOLD_PROPERTY: Final = "hive.compactor.abortedtxn.threshold"
"""After ``COMPACTOR_THRESHOLD_PREFIX``: the ``ABORTED_NUM_THRESHOLD`` of a table."""

ABORTED_AGE_THRESHOLD_PROPERTY: Final = "hive.compactor.aborted.txn.time.threshold"
"""After ``COMPACTOR_THRESHOLD_PREFIX``: the ``ABORTED_AGE_THRESHOLD_SECONDS`` of a table."""

DELTA_NUM_THRESHOLD: Final = 10
"""Deltas in a partition, a count, above which the initiator queues a compaction (minor, or
major when there is no base yet)."""

DELTA_PCT_THRESHOLD: Final = 0.1
"""The deltas' size as a fraction of the base's above which the initiator queues a major
compaction."""

ABORTED_NUM_THRESHOLD: Final = 1000
"""Aborted writes in a partition, a count, from which the initiator queues a major
compaction."""

ABORTED_AGE_THRESHOLD_SECONDS: Final = 12 * 3600.0
"""Seconds after which an aborted write makes the initiator queue a minor compaction."""
