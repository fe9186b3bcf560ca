"""DDL, schema versioning and value encodings of the SQL metastores (SQLite and PostgreSQL).

The tables mirror Hive's metastore where Hive's design carries a reason (spec §12):
``sequences`` plays NEXT_TXN_ID (plus a separate commit sequence), ``next_write_id`` and
``txn_write_ids`` play NEXT_WRITE_ID / TXN_TO_WRITE_ID, ``components`` plays TXN_COMPONENTS /
WRITE_SET (what a txn wrote, kept after commit so later commits can detect conflicts).

Write ids are keyed by ``table_id`` rather than by name so that dropping a table and creating
one of the same name starts a fresh history instead of inheriting the old one's.

Times are stored as integer microseconds since the Unix epoch (UTC): they compare and subtract
exactly in SQL (the timeout reaper runs a ``<`` on them) and cannot carry a local time zone.
"""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime

import pyarrow as pa

from acidstore.errors import MetastoreVersionError
from acidstore.metastore.sql import Dialect, Session

__all__ = [
    "DEFAULT_TIMEOUT",
    "SCHEMA_VERSION",
    "ddl_statements",
    "decode_schema",
    "encode_schema",
    "ensure_schema",
    "from_micros",
    "now_micros",
    "stored_schema_version",
    "to_micros",
]

#: Bump on any DDL change and add a migration step to ``_MIGRATIONS``. Version 2 added the
#: compaction queue (new tables only, so a version-1 file upgrades in place); version 3 added
#: ``compactions.cleaning_started`` (time travel must know where the cleaner has begun);
#: version 4 stores table locations relative to the warehouse root (a copied warehouse must
#: write into its own files, not the original's); version 5 adds ``tables.metadata_version``
#: (``add_columns`` bumps it; a writer that planned against an older one fails its commit);
#: version 6 adds ``compaction_outputs`` (a new table: compactions committed before it have no
#: record, and their directories are read unchecked, as Hive's are); version 7 adds
#: ``txn_app_versions`` and ``app_versions`` (idempotent writes; new tables only, which the
#: DDL creates, so a version-6 store upgrades by its version number alone); version 8 moves
#: PostgreSQL's txn ids and commit numbers to server sequences and adds its server-side
#: functions (``postgres_functions``: a version-7 client would hand out the same ids from the
#: ``sequences`` rows, so it must refuse the store; SQLite's tables are unchanged); version 9
#: stores each txn's own ``heartbeat_timeout`` and each claimed compaction's ``stale_after``
#: (a client with a short timeout reaped the live txns of one with a long timeout: every
#: expiry is judged by its owner's window; txns open at the migration get ``DEFAULT_TIMEOUT``,
#: and a claim without ``stale_after`` is judged by the claiming worker's window, as before);
#: version 10 adds ``original_files`` (the pre-ACID originals ``adopt_table`` placed, which no
#: write records; a new table only, so a version-9 store upgrades by its version number alone,
#: and tables adopted before it have no record: fsck reports their originals as before);
#: version 11 adds ``components.bucket_files`` (each bucket file a write committed, with its
#: bytes: a file renamed to another bucket id kept the count and the bytes the record had, and
#: a read gave a deleted row back; components committed before it are checked by count only);
#: version 12 adds ``tables.originals_recorded`` (1 for tables created from it on, whose
#: original files ``original_files`` lists completely, so a read refuses an original-named file
#: copied into a partition and misses none removed; 0 for tables created before, which may be
#: adopted ones without a record: read as before); version 13 has the metastore assign commit
#: times (rising with commit order, ``sql_txn.commit_time``: the index ``txns_commit_times``
#: finds the latest) and record the warehouse it serves (``meta`` rows ``warehouse_root`` and
#: ``warehouse_id``, ``sql_binding``: a store of an older version is bound by the first
#: connect after its migration); ``compactions_by_txn`` finds the compactions a snapshot does
#: not see (``sql_queue.unseen_replacements``). A version-12 store upgrades by its version
#: number alone (the DDL creates the indexes).
#: Version 14 moves SQLite's reader leases to a lease file of their own
#: (``sqlite_leases``) and makes PostgreSQL's lease calls take no writer's lock
#: (``sql_leases``). No table changes (``LEASE_STORE_VERSION``).
#: Version 15 adds ``history.rows_updated`` (``history()`` counts an UPDATE's rows as
#: updated, not as deleted and inserted; rows committed before it keep 0) and has
#: PostgreSQL's one-statement commit store it (``acid_commit_v15``). From it on, a table's
#: stored ``schema`` is its files' row struct, which may hold dropped columns' placeholders
#: (``TableInfo.file_schema``): the number fences off older clients, which would read and
#: write a placeholder as a column of its own. A table renamed from it on keeps its location.
#: Version 16 indexes the record a read plans from (``read.record_plan``) by partition:
#: ``components_by_write`` (table, partition, write id) finds a partition's committed writes
#: from its base up, ``compaction_outputs_by_partition`` its compactions' outputs; each
#: replaces the index that was its prefix (dropped by the migration, ``_DROPPED_INDEXES``).
#: No table changes: the number has clients that plan from the record find the indexes.
SCHEMA_VERSION = 16
_UPGRADABLE = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
#: The version from which SQLite's leases live in the lease file. Its migration changes no
#: table: the number fences older clients off, since an older cleaner reads only the leases
#: of the metastore file and would delete what today's readers (leasing in the lease file)
#: read. The ``leases`` table stays: a client connected before the migration keeps leasing
#: there until it reconnects, and the cleaner keeps counting those leases.
LEASE_STORE_VERSION = 14
#: Hive's default ``hive.txn.timeout`` (300 s) in microseconds: the timeout of txns that
#: were open when a store was migrated to version 9 (and of rows an older client inserts)
DEFAULT_TIMEOUT = 300_000_000
#: Version 4: ``<anything>/<db>.db/<table>``, the only form ``Warehouse.create_table`` ever
#: stored, becomes ``<db>.db/<table>``; any other location stays as it is. Compared with
#: ``substr`` from a positive start (a LIKE pattern would read the ``_`` of names as a wildcard;
#: a negative start means the end in SQLite but not in PostgreSQL).
_RELATIVE_LOCATIONS = (
    "UPDATE tables SET location = db_name || '.db/' || name "
    "WHERE length(location) > length(db_name || '.db/' || name) + 1 "
    "AND substr(location, length(location) - length('/' || db_name || '.db/' || name) + 1) = "
    "'/' || db_name || '.db/' || name")
#: SQL that brings an older store's existing tables up to this version, by the version it has
#: (tables that did not exist yet are created by the DDL itself, which runs first)
_METADATA_VERSION = "ALTER TABLE tables ADD COLUMN metadata_version INTEGER NOT NULL DEFAULT 0"
_MIGRATIONS = {
    1: (_RELATIVE_LOCATIONS, _METADATA_VERSION),
    2: ("ALTER TABLE compactions ADD COLUMN cleaning_started INTEGER", _RELATIVE_LOCATIONS,
        _METADATA_VERSION),
    3: (_RELATIVE_LOCATIONS, _METADATA_VERSION),
    4: (_METADATA_VERSION,),
}
#: Columns added since version 8, as (table, column, definition): every migration adds those
#: its store lacks (a table the DDL just created already has them), whatever its version.
_ADDED_COLUMNS = (
    ("txns", "heartbeat_timeout", f"INTEGER NOT NULL DEFAULT {DEFAULT_TIMEOUT}"),
    ("compactions", "stale_after", "INTEGER"),
    ("components", "bucket_files", "TEXT"),
    ("tables", "originals_recorded", "INTEGER NOT NULL DEFAULT 0"),
    ("history", "rows_updated", "INTEGER NOT NULL DEFAULT 0"),
)
#: Indexes a newer one replaced (its prefix): a migration drops them, whatever its version
_DROPPED_INDEXES = ("components_by_partition", "compaction_outputs_by_table")

_DDL = """
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sequences (
    name       TEXT PRIMARY KEY,
    next_value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS databases (
    name    TEXT PRIMARY KEY,
    created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tables (
    table_id         INTEGER PRIMARY KEY AUTOINCREMENT,
    db_name          TEXT NOT NULL REFERENCES databases(name),
    name             TEXT NOT NULL,
    schema           TEXT NOT NULL,
    partition_schema TEXT NOT NULL,
    bucket_by        TEXT NOT NULL,
    buckets          INTEGER NOT NULL,
    properties       TEXT NOT NULL,
    location         TEXT NOT NULL,
    created          INTEGER NOT NULL,
    metadata_version INTEGER NOT NULL DEFAULT 0,
    originals_recorded INTEGER NOT NULL DEFAULT 0,
    UNIQUE (db_name, name)
);
CREATE TABLE IF NOT EXISTS partitions (
    table_id  INTEGER NOT NULL,
    part TEXT NOT NULL,
    PRIMARY KEY (table_id, part)
);
CREATE TABLE IF NOT EXISTS txns (
    txn_id              INTEGER PRIMARY KEY,
    state               TEXT NOT NULL CHECK (state IN ('open', 'committed', 'aborted')),
    kind                TEXT NOT NULL,
    user_name           TEXT NOT NULL,
    host                TEXT NOT NULL,
    started             INTEGER NOT NULL,
    last_heartbeat      INTEGER NOT NULL,
    finished            INTEGER,
    snapshot            TEXT NOT NULL,
    snapshot_commit_seq INTEGER NOT NULL,
    commit_seq          INTEGER UNIQUE,
    abort_reason        TEXT,
    heartbeat_timeout   INTEGER NOT NULL DEFAULT {default_timeout}
);
CREATE INDEX IF NOT EXISTS txns_by_state ON txns (state, last_heartbeat);
CREATE INDEX IF NOT EXISTS txns_commit_times ON txns (finished) WHERE state = 'committed';
CREATE TABLE IF NOT EXISTS next_write_id (
    table_id   INTEGER PRIMARY KEY,
    next_value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS txn_write_ids (
    txn_id     INTEGER NOT NULL REFERENCES txns(txn_id),
    table_id   INTEGER NOT NULL,
    table_name TEXT NOT NULL,
    write_id   INTEGER NOT NULL,
    PRIMARY KEY (txn_id, table_id),
    UNIQUE (table_id, write_id)
);
CREATE TABLE IF NOT EXISTS components (
    component_id  INTEGER PRIMARY KEY AUTOINCREMENT,
    txn_id        INTEGER NOT NULL REFERENCES txns(txn_id),
    table_id      INTEGER NOT NULL,
    table_name    TEXT NOT NULL,
    part     TEXT NOT NULL,
    operation     TEXT NOT NULL,
    write_id      INTEGER NOT NULL,
    directories   TEXT NOT NULL,
    rows_inserted INTEGER NOT NULL,
    rows_deleted  INTEGER NOT NULL,
    files         INTEGER NOT NULL,
    bytes         INTEGER NOT NULL,
    bucket_files  TEXT
);
CREATE INDEX IF NOT EXISTS components_by_txn ON components (txn_id);
CREATE INDEX IF NOT EXISTS components_by_write ON components (table_id, part, write_id);
CREATE INDEX IF NOT EXISTS components_overwrites ON components (table_id, part, write_id)
    WHERE operation = 'overwrite';
CREATE TABLE IF NOT EXISTS compaction_outputs (
    txn_id       INTEGER NOT NULL REFERENCES txns(txn_id),
    table_id     INTEGER NOT NULL,
    part         TEXT NOT NULL,
    directory    TEXT NOT NULL,
    files        INTEGER NOT NULL,
    rows_written INTEGER NOT NULL,
    bytes        INTEGER NOT NULL,
    file_rows    TEXT NOT NULL,
    PRIMARY KEY (txn_id, table_id, directory)
);
CREATE INDEX IF NOT EXISTS compaction_outputs_by_partition ON compaction_outputs (table_id, part);
CREATE TABLE IF NOT EXISTS history (
    table_id      INTEGER NOT NULL,
    write_id      INTEGER NOT NULL,
    txn_id        INTEGER NOT NULL,
    commit_time   INTEGER NOT NULL,
    operation     TEXT NOT NULL,
    rows_inserted INTEGER NOT NULL,
    rows_deleted  INTEGER NOT NULL,
    files         INTEGER NOT NULL,
    bytes         INTEGER NOT NULL,
    partitions    TEXT NOT NULL,
    rows_updated  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (table_id, write_id)
);
CREATE TABLE IF NOT EXISTS locks (
    lock_id    INTEGER PRIMARY KEY AUTOINCREMENT,
    txn_id     INTEGER NOT NULL REFERENCES txns(txn_id),
    table_id   INTEGER NOT NULL,
    db_name    TEXT NOT NULL,
    table_name TEXT NOT NULL,
    part  TEXT NOT NULL,
    lock_type  TEXT NOT NULL,
    acquired   INTEGER NOT NULL,
    UNIQUE (txn_id, table_id, part)
);
CREATE TABLE IF NOT EXISTS leases (
    lease_id  INTEGER PRIMARY KEY AUTOINCREMENT,
    table_id  INTEGER NOT NULL,
    snapshot  TEXT NOT NULL,
    write_ids TEXT NOT NULL,
    acquired  INTEGER NOT NULL,
    expires   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS leases_by_table ON leases (table_id, expires);
CREATE TABLE IF NOT EXISTS compactions (
    compaction_id       INTEGER PRIMARY KEY AUTOINCREMENT,
    table_id            INTEGER NOT NULL,
    table_name          TEXT NOT NULL,
    part                TEXT NOT NULL,
    kind                TEXT NOT NULL CHECK (kind IN ('minor', 'major')),
    state               TEXT NOT NULL,
    reason              TEXT NOT NULL,
    enqueued            INTEGER NOT NULL,
    worker              TEXT,
    started             INTEGER,
    heartbeat           INTEGER,
    txn_id              INTEGER,
    highest_write_id    INTEGER,
    compactor_write_ids TEXT,
    next_txn_id         INTEGER,
    compacted           INTEGER,
    finished            INTEGER,
    error               TEXT,
    attempts            INTEGER NOT NULL DEFAULT 0,
    cleaning_started    INTEGER,
    stale_after         INTEGER
);
CREATE INDEX IF NOT EXISTS compactions_by_state ON compactions (state, table_id, part);
CREATE INDEX IF NOT EXISTS compactions_by_txn ON compactions (txn_id);
CREATE TABLE IF NOT EXISTS original_files (
    table_id INTEGER NOT NULL,
    part     TEXT NOT NULL,
    name     TEXT NOT NULL,
    bytes    INTEGER NOT NULL,
    PRIMARY KEY (table_id, part, name)
);
CREATE TABLE IF NOT EXISTS txn_app_versions (
    txn_id   INTEGER NOT NULL REFERENCES txns(txn_id),
    table_id INTEGER NOT NULL,
    app_id   TEXT NOT NULL,
    version  INTEGER NOT NULL,
    PRIMARY KEY (txn_id, table_id, app_id)
);
CREATE TABLE IF NOT EXISTS app_versions (
    table_id    INTEGER NOT NULL,
    app_id      TEXT NOT NULL,
    version     INTEGER NOT NULL,
    txn_id      INTEGER NOT NULL,
    commit_time INTEGER NOT NULL,
    PRIMARY KEY (table_id, app_id)
);
""".replace("{default_timeout}", str(DEFAULT_TIMEOUT))

_SEQUENCES = (("txn", 1), ("commit", 1))


def ddl_statements(dialect: Dialect) -> list[str]:
    """The DDL above as ``dialect`` spells it: one text for both engines, so the two schemas
    cannot drift apart. PostgreSQL gets 64-bit integers (SQLite's INTEGER already is) and an
    identity column where SQLite says AUTOINCREMENT."""
    return [_translate(statement, dialect) for statement in _DDL.split(";") if statement.strip()]


def _translate(statement: str, dialect: Dialect) -> str:
    if dialect.name == "sqlite":
        return statement
    statement = statement.replace("INTEGER PRIMARY KEY AUTOINCREMENT",
                                  "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
    return re.sub(r"\bINTEGER\b", "BIGINT", statement)


def ensure_schema(conn: Session, where: str) -> None:
    """Create the tables on first use, migrate an older schema, or refuse a newer one.

    The caller holds an exclusive lock (SQLite ``BEGIN IMMEDIATE``, a PostgreSQL advisory
    lock) so that several processes opening a new store at once create it exactly once, and
    runs this in one transaction: a refusal rolls every statement back (DDL is transactional in
    both engines), so a store written by a newer library is never touched.
    """
    dialect = conn.dialect
    for statement in ddl_statements(dialect):
        conn.execute(statement)
    version = _stored_version(conn, where)
    if version is None:
        conn.execute("INSERT INTO meta (name, value) VALUES ('schema_version', ?)",
                     (str(SCHEMA_VERSION),))
        conn.executemany("INSERT INTO sequences (name, next_value) VALUES (?, ?) "
                         "ON CONFLICT DO NOTHING", _SEQUENCES)
        return
    if version == SCHEMA_VERSION:
        return
    for statement in _MIGRATIONS.get(version, ()):
        conn.execute(_translate(statement, dialect))
    for table, column, definition in _ADDED_COLUMNS:
        if conn.execute(dialect.column_exists, (table, column)).fetchone() is None:
            conn.execute(_translate(f"ALTER TABLE {table} ADD COLUMN {column} {definition}",
                                    dialect))
    for index in _DROPPED_INDEXES:
        conn.execute(f"DROP INDEX IF EXISTS {index}")
    conn.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'",
                 (str(SCHEMA_VERSION),))


def stored_schema_version(conn: Session, where: str) -> int | None:
    """The store's schema version, read without changing or locking anything (None: a new,
    empty store): connecting to a current store then takes no write lock, so it never waits
    for a writer. ``MetastoreVersionError`` for a version this acidstore cannot open."""
    if conn.execute(conn.dialect.table_exists, ("meta",)).fetchone() is None:
        return None
    return _stored_version(conn, where)


def _stored_version(conn: Session, where: str) -> int | None:
    """None, ``SCHEMA_VERSION`` or an upgradable version; any other is refused."""
    row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
    if row is None:
        return None
    stored = str(row[0])
    version = int(stored) if stored.isdigit() else None
    if version == SCHEMA_VERSION or version in _UPGRADABLE:
        return version
    if version is not None and version > SCHEMA_VERSION:
        raise MetastoreVersionError(
            f"metastore {where} has schema version {version}, newer than this acidstore "
            f"supports ({SCHEMA_VERSION}); upgrade acidstore to open it (nothing was changed)")
    raise MetastoreVersionError(
        f"metastore {where} has an unknown schema version {stored!r} (this acidstore reads "
        f"versions {min(_UPGRADABLE)} to {SCHEMA_VERSION}); refusing to open it")


def now_micros() -> int:
    """The current UTC time in microseconds since the epoch."""
    return to_micros(datetime.now(UTC))


def to_micros(moment: datetime) -> int:
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    """Exact inverse of ``to_micros`` (no float rounding), always UTC-aware."""
    seconds, rest = divmod(micros, 1_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest)


def encode_schema(schema: pa.Schema) -> str:
    """Arrow IPC bytes keep exact types (decimal precision, timestamp units, nested fields)
    and field metadata, which a type-name string would lose; base64 keeps the column TEXT."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def decode_schema(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))
