BEGIN TRANSACTION;
CREATE TABLE app_versions (
    table_id    INTEGER NOT NULL,
    app_id      TEXT NOT NULL,
    version     INTEGER NOT NULL,
    txn_id      INTEGER NOT NULL,
    commit_time INTEGER NOT NULL,
    PRIMARY KEY (table_id, app_id)
);
CREATE TABLE compaction_outputs (
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
CREATE TABLE compactions (
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
    cleaning_started    INTEGER
);
CREATE TABLE components (
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
    bytes         INTEGER NOT NULL
);
INSERT INTO "components" VALUES(2,1,1,'default.t','','insert',1,'["delta_0000001_0000001_0000"]',1,0,1,10);
INSERT INTO "components" VALUES(3,2,1,'default.t','','insert',2,'["delta_0000002_0000002_0000"]',0,0,0,0);
CREATE TABLE databases (
    name    TEXT PRIMARY KEY,
    created INTEGER NOT NULL
);
INSERT INTO "databases" VALUES('default',1795626825257369);
CREATE TABLE history (
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
    PRIMARY KEY (table_id, write_id)
);
INSERT INTO "history" VALUES(1,1,1,1795626825272201,'insert',1,0,1,10,'[]');
CREATE TABLE leases (
    lease_id  INTEGER PRIMARY KEY AUTOINCREMENT,
    table_id  INTEGER NOT NULL,
    snapshot  TEXT NOT NULL,
    write_ids TEXT NOT NULL,
    acquired  INTEGER NOT NULL,
    expires   INTEGER NOT NULL
);
CREATE TABLE locks (
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
INSERT INTO "locks" VALUES(2,2,1,'default','t','','shared_write',1795626825284175);
CREATE TABLE meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO "meta" VALUES('schema_version','8');
CREATE TABLE next_write_id (
    table_id   INTEGER PRIMARY KEY,
    next_value INTEGER NOT NULL
);
INSERT INTO "next_write_id" VALUES(1,3);
CREATE TABLE partitions (
    table_id  INTEGER NOT NULL,
    part TEXT NOT NULL,
    PRIMARY KEY (table_id, part)
);
CREATE TABLE sequences (
    name       TEXT PRIMARY KEY,
    next_value INTEGER NOT NULL
);
INSERT INTO "sequences" VALUES('txn',3);
INSERT INTO "sequences" VALUES('commit',2);
CREATE TABLE tables (
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
    UNIQUE (db_name, name)
);
INSERT INTO "tables" VALUES(1,'default','t','/////6gAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAIAAABEAAAABAAAANT///8AAAEFEAAAABwAAAAEAAAAAAAAAAQAAABuYW1lAAAAAAQABAAEAAAAEAAUAAgABgAHAAwAAAAQABAAAAAAAAECEAAAABwAAAAEAAAAAAAAAAIAAABpZAAACAAMAAgABwAIAAAAAAAAAUAAAAA=','/////zAAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAAAAAA=','[]',0,'{}','/warehouse/default.db/t',1795626825257369,0);
CREATE TABLE txn_app_versions (
    txn_id   INTEGER NOT NULL REFERENCES txns(txn_id),
    table_id INTEGER NOT NULL,
    app_id   TEXT NOT NULL,
    version  INTEGER NOT NULL,
    PRIMARY KEY (txn_id, table_id, app_id)
);
CREATE TABLE txn_write_ids (
    txn_id     INTEGER NOT NULL REFERENCES txns(txn_id),
    table_id   INTEGER NOT NULL,
    table_name TEXT NOT NULL,
    write_id   INTEGER NOT NULL,
    PRIMARY KEY (txn_id, table_id),
    UNIQUE (table_id, write_id)
);
INSERT INTO "txn_write_ids" VALUES(1,1,'default.t',1);
INSERT INTO "txn_write_ids" VALUES(2,1,'default.t',2);
CREATE TABLE txns (
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
    abort_reason        TEXT
);
INSERT INTO "txns" VALUES(1,'committed','default','v8','old',1795626825262335,1795626825262335,1795626825272201,'1:9223372036854775807::',0,1,NULL);
INSERT INTO "txns" VALUES(2,'open','default','v8','old',1795626825276163,1795626825276163,NULL,'2:9223372036854775807::',1,NULL,NULL);
CREATE INDEX txns_by_state ON txns (state, last_heartbeat);
CREATE INDEX components_by_txn ON components (txn_id);
CREATE INDEX components_by_partition ON components (table_id, part);
CREATE INDEX compaction_outputs_by_table ON compaction_outputs (table_id);
CREATE INDEX leases_by_table ON leases (table_id, expires);
CREATE INDEX compactions_by_state ON compactions (state, table_id, part);
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('tables',1);
INSERT INTO "sqlite_sequence" VALUES('components',3);
INSERT INTO "sqlite_sequence" VALUES('locks',2);
COMMIT;
