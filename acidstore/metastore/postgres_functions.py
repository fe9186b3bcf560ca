"""Server-side objects of the PostgreSQL metastore: id sequences and the hot calls' functions.

Why they exist: a commit cycle used to be some 30 statements, each a round trip to a server
process, and every open and every commit held one global lock through its WAL flush, so all
clients together got at most one open and one commit per flush. Here:
- txn ids and commit sequence numbers come from PostgreSQL sequences (``nextval`` takes no
  lock that lasts until commit), instead of a row bumped under a global lock;
- opening a txn (with its planned writes), a heartbeat and a plain insert's commit are one
  function call each: one round trip, one statement, one WAL flush.

The gap problem this creates, and why snapshots stay correct (docs/dev/architecture.md, "The
PostgreSQL metastore: opens and commits without a global lock", has the full argument): a txn
id is handed out by ``nextval`` before the row of its txn is visible, so a snapshot may see txn
11 committed while txn 10's open is still in flight. ``acid_snapshot_v9`` therefore lists every
id above the *floor* that has no visible row as open. The floor is a row of ``sequences``
(``txn_floor``): every txn id at or below it has a committed row (or had one, deleted by
``forget_aborted``). An open whose id is more than ``_FLOOR_LAG`` above the floor tries to
raise it (``SKIP LOCKED``: never waits for another open doing the same); an id whose open never
completed (the client died between ``nextval`` and its commit) is filled with an aborted row
once a later txn has been open for ``gap_timeout`` microseconds. The row's primary key settles
any race with a very late open of that id: the open fails with a unique violation and is
retried under a new id.

Function names carry the schema version they belong to, so a newer acidstore replaces them
under new names instead of changing what an older client calls. Version 9 judges each txn by
its own ``heartbeat_timeout`` (the ``_v8`` functions took the caller's cutoff); a migrated
store keeps the ``_v8`` ones for clients connected before the migration. Version 13 takes a
commit's time from the server inside the commit (``acid_commit_v13`` returns it); the
``_v9`` commit becomes a call of it, so clients connected before that migration commit at
the server's time as well. Version 15 stores a history row's ``rows_updated``
(``acid_commit_v15``); the ``_v13`` commit becomes a call of it (an older client's history
rows carry no such count: 0).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FUNCTIONS_PRESENT", "GAP_TIMEOUT_MICROS", "install"]

#: how long an id may stay a gap (no row) after a later txn started, before an open fills it
#: with an aborted row; far above any open's duration (one statement), so only a dead client's
#: id is ever filled; a live one that is that late fails and retries with a new id
GAP_TIMEOUT_MICROS = 60_000_000
#: an open raises the floor once it is this far below the new txn id: the snapshot's gap
#: search covers the ids above the floor, so this bounds its work
_FLOOR_LAG = 32

#: a query with one row when every function of this version exists in the store's schema
FUNCTIONS_PRESENT = (
    "SELECT 1 WHERE to_regproc('acid_open_v9') IS NOT NULL AND "
    "to_regproc('acid_commit_v15') IS NOT NULL AND to_regclass('acid_txn_ids') IS NOT NULL")

_SEQUENCES = """
DO $$
BEGIN
  IF to_regclass('acid_txn_ids') IS NULL THEN
    CREATE SEQUENCE acid_txn_ids;
    CREATE SEQUENCE acid_commit_seqs;
    -- continue where the counters of the sequences table stopped (a migrated store)
    PERFORM setval('acid_txn_ids', (SELECT next_value FROM sequences WHERE name = 'txn'), false);
    PERFORM setval('acid_commit_seqs',
                   (SELECT next_value FROM sequences WHERE name = 'commit'), false);
    INSERT INTO sequences (name, next_value)
      SELECT 'txn_floor', next_value - 1 FROM sequences WHERE name = 'txn'
      ON CONFLICT DO NOTHING;
  END IF;
END $$
"""

_SNAPSHOT = """
CREATE OR REPLACE FUNCTION acid_snapshot_v9(p_own bigint)
RETURNS TABLE (hwm bigint, open_ids bigint[], aborted_ids bigint[])
LANGUAGE plpgsql STABLE AS $$
BEGIN
  -- one statement, so one MVCC snapshot: the hwm, the listed txns and the gaps agree
  RETURN QUERY WITH top AS (
    SELECT greatest((SELECT coalesce(max(txn_id), 0) FROM txns), coalesce(p_own, 0)) AS hwm,
           (SELECT next_value FROM sequences WHERE name = 'txn_floor') AS floor
  ), listed AS (
    SELECT t.txn_id, t.state FROM txns t, top
    WHERE t.state IN ('open', 'aborted') AND t.txn_id <= top.hwm
      AND t.txn_id IS DISTINCT FROM p_own
  ), gaps AS (
    -- the ids above the floor minus the rows there: a range of the primary key (an anti
    -- join would hash every txn row ever written)
    SELECT g AS txn_id FROM top, generate_series(top.floor + 1, top.hwm) g
    WHERE g IS DISTINCT FROM p_own
    EXCEPT
    SELECT t.txn_id FROM txns t, top WHERE t.txn_id > top.floor AND t.txn_id <= top.hwm
  )
  SELECT top.hwm,
         ARRAY(SELECT l.txn_id FROM listed l WHERE l.state = 'open' UNION
               SELECT gaps.txn_id FROM gaps ORDER BY 1),
         ARRAY(SELECT l.txn_id FROM listed l WHERE l.state = 'aborted' ORDER BY 1)
  FROM top;
END $$
"""

_PAD = """
CREATE OR REPLACE FUNCTION acid_pad7_v9(p bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN p < 10000000 THEN lpad(p::text, 7, '0')
                                         ELSE p::text END $$
"""

_REAP = """
CREATE OR REPLACE FUNCTION acid_reap_v9(p_now bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  -- §14: an open txn without a heartbeat for its own timeout is aborted, with its locks
  WITH stale AS (
    UPDATE txns SET state = 'aborted', finished = p_now,
                    abort_reason = 'timed out: no heartbeat within the transaction timeout'
    WHERE state = 'open' AND last_heartbeat < p_now - heartbeat_timeout RETURNING txn_id)
  DELETE FROM locks WHERE txn_id IN (SELECT txn_id FROM stale);
END $$
"""

_NEW_WRITE_ID = """
CREATE OR REPLACE FUNCTION acid_new_write_id_v9(p_txn bigint, p_table bigint, p_name text)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_write bigint;
BEGIN
  -- §12.1: the table's counter row, bumped in one upsert, stays locked until the allocation
  -- commits, so per-table write ids are contiguous (Hive's NEXT_WRITE_ID)
  WITH bumped AS (
    INSERT INTO next_write_id AS n (table_id, next_value) VALUES (p_table, 2)
    ON CONFLICT (table_id) DO UPDATE SET next_value = n.next_value + 1
    RETURNING n.next_value - 1 AS write_id)
  INSERT INTO txn_write_ids (txn_id, table_id, table_name, write_id)
    SELECT p_txn, p_table, p_name, b.write_id FROM bumped b
    RETURNING txn_write_ids.write_id INTO v_write;
  RETURN v_write;
END $$
"""

#: The checks of ``sql_txn.require_open`` that let the fast path go on: the txn's row, locked
#: (a commit, an abort and a heartbeat of one txn queue up), open and not timed out by its own
#: timeout. Anything else returns false, and the general path reaps and reports.
_ALIVE = """
CREATE OR REPLACE FUNCTION acid_alive_v9(p_txn bigint, p_now bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  RETURN coalesce((SELECT t.state = 'open' AND t.last_heartbeat >= p_now - t.heartbeat_timeout
                   FROM txns t WHERE t.txn_id = p_txn FOR UPDATE), false);
END $$
"""

_ALLOCATE = """
CREATE OR REPLACE FUNCTION acid_allocate_v9(p_txn bigint, p_now bigint, p_table bigint,
                                            p_db text, p_name text)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_write bigint;
BEGIN
  IF NOT acid_alive_v9(p_txn, p_now) THEN RETURN NULL; END IF;
  PERFORM 1 FROM tables WHERE table_id = p_table AND db_name = p_db AND name = p_name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'table %.% changed', p_db, p_name USING ERRCODE = 'AS001';
  END IF;
  -- one write id per (txn, table), reused by later statements
  SELECT w.write_id INTO v_write FROM txn_write_ids w
    WHERE w.txn_id = p_txn AND w.table_id = p_table;
  IF FOUND THEN RETURN v_write; END IF;
  RETURN acid_new_write_id_v9(p_txn, p_table, p_db || '.' || p_name);
END $$
"""

#: ``sql_txn.record_write``: the component before its files exist, and the writer's lock; no
#: row (false) when the txn is not open or the component names another write id
_RECORD = """
CREATE OR REPLACE FUNCTION acid_record_v9(p_txn bigint, p_now bigint, p_component jsonb)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE o record;
BEGIN
  IF NOT acid_alive_v9(p_txn, p_now) THEN RETURN false; END IF;
  SELECT * INTO o FROM acid_offered_v9(p_txn, jsonb_build_array(p_component));
  IF o.table_id IS NULL OR NOT EXISTS (SELECT 1 FROM tables t WHERE t.table_id = o.table_id)
  THEN
    RETURN false;
  END IF;
  INSERT INTO components (txn_id, table_id, table_name, part, operation, write_id,
                          directories, rows_inserted, rows_deleted, files, bytes, bucket_files)
    SELECT p_txn, o.table_id, o.table_name, o.part, o.operation, o.write_id, o.directories,
           o.rows_inserted, o.rows_deleted, o.files, o.bytes, p_component->>'bucket_files'
    WHERE NOT EXISTS (
      SELECT 1 FROM components c WHERE c.txn_id = p_txn AND c.table_name = o.table_name
        AND c.part = o.part AND c.operation = o.operation AND c.write_id = o.write_id
        AND c.directories::jsonb = o.directories::jsonb AND c.rows_inserted = o.rows_inserted
        AND c.rows_deleted = o.rows_deleted AND c.files = o.files AND c.bytes = o.bytes);
  -- §13.2: shared_write, or exclusive for an overwrite
  INSERT INTO locks (txn_id, table_id, db_name, table_name, part, lock_type, acquired)
    SELECT p_txn, t.table_id, t.db_name, t.name, o.part,
           CASE WHEN o.operation = 'overwrite' THEN 'exclusive' ELSE 'shared_write' END, p_now
    FROM tables t WHERE t.table_id = o.table_id
    ON CONFLICT DO NOTHING;
  IF o.operation = 'overwrite' THEN
    UPDATE locks SET lock_type = 'exclusive'
      WHERE txn_id = p_txn AND table_id = o.table_id AND part = o.part;
  END IF;
  RETURN true;
END $$
"""

#: Raise the floor to just below the lowest id up to ``p_top`` without a row; first fill with an
#: aborted row every such id below which a txn started before ``p_dead_before`` (NULL: fill
#: none). Whoever holds the floor row, the others skip (an open never waits for it).
_RAISE_FLOOR = """
CREATE OR REPLACE FUNCTION acid_raise_floor_v9(p_dead_before bigint, p_top bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE v_floor bigint;
BEGIN
  SELECT next_value INTO v_floor FROM sequences WHERE name = 'txn_floor'
    FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN RETURN; END IF;
  IF p_dead_before IS NOT NULL THEN
    INSERT INTO txns (txn_id, state, kind, user_name, host, started, last_heartbeat,
                      finished, snapshot, snapshot_commit_seq, abort_reason)
      SELECT g, 'aborted', 'default', '', '', p_dead_before, p_dead_before, p_dead_before,
             '', 0, 'its open never completed'
      FROM generate_series(v_floor + 1, p_top - 1) g
      WHERE NOT EXISTS (SELECT 1 FROM txns t WHERE t.txn_id = g)
        AND EXISTS (SELECT 1 FROM txns t WHERE t.txn_id > g AND t.started < p_dead_before)
      ON CONFLICT DO NOTHING;
  END IF;
  UPDATE sequences SET next_value = coalesce(
      (SELECT min(g) FROM generate_series(v_floor + 1, p_top) g
       WHERE NOT EXISTS (SELECT 1 FROM txns t WHERE t.txn_id = g)), p_top + 1) - 1
    WHERE name = 'txn_floor';
END $$
"""

_OPEN = f"""
CREATE OR REPLACE FUNCTION acid_open_v9(p_kind text, p_user text, p_host text, p_now bigint,
                                        p_timeout bigint, p_gap bigint, p_plans jsonb)
RETURNS TABLE (txn_id bigint, snapshot text, write_ids jsonb)
LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint; v_hwm bigint; v_open bigint[]; v_aborted bigint[]; v_snapshot text;
  v_plan jsonb; v_table bigint; v_write bigint; v_range text; v_dirs text[];
  v_ids jsonb := '{{}}';
  v_floor bigint;
BEGIN
  PERFORM acid_reap_v9(p_now);
  -- the id first, the snapshot after it: whatever this txn does not see committed, it
  -- lists (an id handed out before ours whose row is not visible yet is a gap: open)
  v_id := nextval('acid_txn_ids');
  SELECT s.hwm, s.open_ids, s.aborted_ids INTO v_hwm, v_open, v_aborted
    FROM acid_snapshot_v9(v_id) s;
  v_snapshot := v_hwm || ':' || coalesce(v_open[1], 9223372036854775807) || ':'
                || array_to_string(v_open, ',') || ':' || array_to_string(v_aborted, ',');
  INSERT INTO txns (txn_id, state, kind, user_name, host, started, last_heartbeat, snapshot,
                    snapshot_commit_seq, heartbeat_timeout)
  VALUES (v_id, 'open', p_kind, p_user, p_host, p_now, p_now, v_snapshot,
          (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
           FROM acid_commit_seqs), p_timeout);
  FOR v_plan IN SELECT * FROM jsonb_array_elements(p_plans) LOOP
    v_table := (v_plan->>'table_id')::bigint;
    -- the caller's cached catalog row must still be the table's (not dropped, not replaced)
    PERFORM 1 FROM tables WHERE table_id = v_table AND db_name = v_plan->>'db'
                           AND name = v_plan->>'name';
    IF NOT FOUND THEN
      RAISE EXCEPTION 'table %.% changed', v_plan->>'db', v_plan->>'name'
        USING ERRCODE = 'AS001';
    END IF;
    v_write := acid_new_write_id_v9(v_id, v_table, (v_plan->>'db') || '.' || (v_plan->>'name'));
    -- PlannedWrite.directory_names: the overwrite's base, the insert's statement-0 delta,
    -- a delete's statement-0 delete delta, an update's delete delta and statement-1 delta
    v_range := acid_pad7_v9(v_write) || '_' || acid_pad7_v9(v_write);
    v_dirs := CASE v_plan->>'operation'
                WHEN 'overwrite' THEN ARRAY['base_' || acid_pad7_v9(v_write)]
                WHEN 'insert' THEN ARRAY['delta_' || v_range || '_0000']
                WHEN 'delete' THEN ARRAY['delete_delta_' || v_range || '_0000']
                ELSE ARRAY['delete_delta_' || v_range || '_0000', 'delta_' || v_range || '_0001']
              END;
    INSERT INTO components (txn_id, table_id, table_name, part, operation, write_id,
                            directories, rows_inserted, rows_deleted, files, bytes)
      SELECT v_id, v_table, (v_plan->>'db') || '.' || (v_plan->>'name'), p,
             v_plan->>'operation', v_write,
             (SELECT json_agg(CASE WHEN p = '' THEN d ELSE p || '/' || d END ORDER BY i)
              FROM unnest(v_dirs) WITH ORDINALITY AS u(d, i))::text,
             0, 0, 0, 0
      FROM jsonb_array_elements_text(v_plan->'partitions') WITH ORDINALITY AS e(p, n)
      ORDER BY n;
    INSERT INTO locks (txn_id, table_id, db_name, table_name, part, lock_type, acquired)
      SELECT v_id, v_table, v_plan->>'db', v_plan->>'name', p,
             CASE WHEN v_plan->>'operation' = 'overwrite' THEN 'exclusive'
                  ELSE 'shared_write' END, p_now
      FROM jsonb_array_elements_text(v_plan->'partitions') WITH ORDINALITY AS e(p, n)
      ORDER BY n;
    v_ids := v_ids || jsonb_build_object((v_plan->>'db') || '.' || (v_plan->>'name'), v_write);
  END LOOP;
  -- raise the floor now and then
  SELECT next_value INTO v_floor FROM sequences WHERE name = 'txn_floor';
  IF v_id - v_floor > {_FLOOR_LAG} THEN
    PERFORM acid_raise_floor_v9(p_now - p_gap, v_id);
  END IF;
  RETURN QUERY SELECT v_id, v_snapshot, v_ids;
END $$
"""

_HEARTBEAT = """
CREATE OR REPLACE FUNCTION acid_heartbeat_v9(p_txn bigint, p_now bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  -- false: not open, or timed out (the general path reaps it and reports which)
  UPDATE txns SET last_heartbeat = p_now
    WHERE txn_id = p_txn AND state = 'open' AND last_heartbeat >= p_now - heartbeat_timeout;
  RETURN FOUND;
END $$
"""

#: The commit of txns whose components are all plain inserts (no Serializable read), with no
#: idempotent-write version and no compaction output: the common case, in one statement. It
#: returns no row whenever anything needs the general path (sql_commit.commit_txn): the txn is not
#: open or timed out, a component names another write id or an old metadata version, or a
#: committed INSERT OVERWRITE hides it; that path then decides and reports, with its messages.
_OFFERED = """
CREATE OR REPLACE FUNCTION acid_offered_v9(p_txn bigint, p_components jsonb)
RETURNS TABLE (n bigint, table_id bigint, table_name text, part text, operation text,
               write_id bigint, directories text, rows_inserted bigint, rows_deleted bigint,
               files bigint, bytes bigint, metadata_version bigint)
LANGUAGE sql STABLE AS $$
  -- the offered components, each with the table its write id was allocated on (NULL: none)
  SELECT e.n, w.table_id, c.table_name, c.part, c.operation, c.write_id, c.directories,
         c.rows_inserted, c.rows_deleted, c.files, c.bytes, c.metadata_version
  FROM jsonb_array_elements(p_components) WITH ORDINALITY AS e(item, n)
  CROSS JOIN LATERAL jsonb_to_record(e.item) AS c(table_name text, part text,
    operation text, write_id bigint, directories text, rows_inserted bigint,
    rows_deleted bigint, files bigint, bytes bigint, metadata_version bigint)
  LEFT JOIN txn_write_ids w ON w.txn_id = p_txn AND w.table_name = c.table_name
                            AND w.write_id = c.write_id
$$
"""

#: The commit of txns whose components are all plain inserts (no Serializable read), with no
#: idempotent-write version and no compaction output: the common case, in one statement. It
#: returns no row whenever anything needs the general path (sql_commit.commit_txn): the txn is not
#: open or timed out, a component names another write id or an old metadata version, or a
#: committed INSERT OVERWRITE hides it; that path then decides and reports, with its messages.
#: The caller sends each distinct component once, and the history row of each table. The
#: commit's time is the server's clock, at least one microsecond after the latest commit
#: visible once the table rows are locked (``sql_txn.commit_time`` says why that orders
#: commits); it is returned, since no client's clock knows it.
_COMMIT = """
CREATE OR REPLACE FUNCTION acid_commit_v15(p_txn bigint, p_components jsonb, p_history jsonb)
RETURNS TABLE (commit_seq bigint, write_ids jsonb, commit_time bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_seq bigint;
  v_time bigint;
BEGIN
  IF NOT acid_alive_v9(p_txn, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint) THEN
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM txn_app_versions a WHERE a.txn_id = p_txn) THEN RETURN; END IF;
  -- commits on one table are serialized (first committer wins); others run in parallel
  PERFORM 1 FROM tables t WHERE t.table_id IN (
    SELECT w.table_id FROM txn_write_ids w WHERE w.txn_id = p_txn) ORDER BY t.table_id
    FOR UPDATE;
  IF EXISTS (SELECT 1 FROM acid_offered_v9(p_txn, p_components) o
             LEFT JOIN tables t ON t.table_id = o.table_id
             WHERE o.operation <> 'insert' OR t.table_id IS NULL
                OR o.metadata_version <> t.metadata_version) THEN
    RETURN;
  END IF;
  -- a committed INSERT OVERWRITE above our write id would hide it (sql_commit._hidden_by_overwrite;
  -- the partial index components_overwrites holds only overwrites)
  IF EXISTS (SELECT 1 FROM acid_offered_v9(p_txn, p_components) o JOIN components c
               ON c.table_id = o.table_id AND c.part = o.part AND c.operation = 'overwrite'
              AND c.write_id > o.write_id AND c.txn_id <> p_txn
             JOIN txns t ON t.txn_id = c.txn_id AND t.state = 'committed') THEN
    RETURN;
  END IF;
  v_seq := nextval('acid_commit_seqs');
  -- after the previous commit of each of our tables (visible: their rows are locked), and
  -- of every commit visible now (the partial index txns_commit_times: one lookup)
  v_time := greatest((EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint,
                     coalesce((SELECT max(x.finished) FROM txns x WHERE x.state = 'committed'),
                              0) + 1);
  UPDATE txns SET state = 'committed', commit_seq = v_seq, finished = v_time
    WHERE txns.txn_id = p_txn;
  -- the committed components replace the ones recorded before writing: they are final
  DELETE FROM components c WHERE c.txn_id = p_txn;
  -- bucket_files (schema 11) taken from the offered item itself: acid_offered_v9 keeps
  -- its result type, which CREATE OR REPLACE cannot change
  INSERT INTO components (txn_id, table_id, table_name, part, operation, write_id,
                          directories, rows_inserted, rows_deleted, files, bytes, bucket_files)
    SELECT p_txn, o.table_id, o.table_name, o.part, o.operation, o.write_id, o.directories,
           o.rows_inserted, o.rows_deleted, o.files, o.bytes,
           p_components->(o.n::int - 1)->>'bucket_files'
    FROM acid_offered_v9(p_txn, p_components) o ORDER BY o.n;
  INSERT INTO history (table_id, write_id, txn_id, commit_time, operation, rows_inserted,
                       rows_updated, rows_deleted, files, bytes, partitions)
    SELECT w.table_id, w.write_id, p_txn, v_time, coalesce(h.operation, ''),
           coalesce(h.rows_inserted, 0), coalesce(h.rows_updated, 0),
           coalesce(h.rows_deleted, 0), coalesce(h.files, 0), coalesce(h.bytes, 0),
           coalesce(h.partitions, '[]')
    FROM txn_write_ids w
    LEFT JOIN jsonb_to_recordset(p_history) AS h(table_name text, operation text,
      rows_inserted bigint, rows_updated bigint, rows_deleted bigint, files bigint,
      bytes bigint, partitions text)
      ON h.table_name = w.table_name
    WHERE w.txn_id = p_txn ORDER BY w.table_name;
  INSERT INTO partitions (table_id, part)
    SELECT DISTINCT o.table_id, o.part FROM acid_offered_v9(p_txn, p_components) o
    WHERE o.part <> '' ON CONFLICT DO NOTHING;
  DELETE FROM locks l WHERE l.txn_id = p_txn;
  RETURN QUERY SELECT v_seq, coalesce(
    (SELECT jsonb_object_agg(w.table_name, w.write_id) FROM txn_write_ids w
     WHERE w.txn_id = p_txn), '{}'::jsonb), v_time;
END $$
"""

#: The version-13 commit, as clients connected before a store's migration to version 15
#: still call it until they reconnect: the version-15 commit (their history rows carry no
#: ``rows_updated``, which stays 0).
_COMMIT_V13 = """
CREATE OR REPLACE FUNCTION acid_commit_v13(p_txn bigint, p_components jsonb, p_history jsonb)
RETURNS TABLE (commit_seq bigint, write_ids jsonb, commit_time bigint)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT c.commit_seq, c.write_ids, c.commit_time
    FROM acid_commit_v15(p_txn, p_components, p_history) c;
END $$
"""

#: The version-9 commit, as clients connected before a store's migration to version 13 still
#: call it until they reconnect: the current commit, so that their commits take the
#: server's time too (the time they passed, their clock plus an offset, is not used).
_COMMIT_V9 = """
CREATE OR REPLACE FUNCTION acid_commit_v9(p_txn bigint, p_now bigint, p_components jsonb,
                                          p_history jsonb)
RETURNS TABLE (commit_seq bigint, write_ids jsonb)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT c.commit_seq, c.write_ids
    FROM acid_commit_v15(p_txn, p_components, p_history) c;
END $$
"""


def install(session: Any) -> None:
    """Create the sequences (once: they continue the old counters) and (re)create the
    functions; the caller holds the schema lock, in the schema's own transaction."""
    for statement in (_SEQUENCES, _SNAPSHOT, _PAD, _REAP, _NEW_WRITE_ID, _ALIVE, _RAISE_FLOOR,
                      _OPEN, _HEARTBEAT, _OFFERED, _ALLOCATE, _RECORD, _COMMIT, _COMMIT_V13,
                      _COMMIT_V9):
        session.conn.execute(statement)
