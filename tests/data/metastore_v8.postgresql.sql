--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: __SCHEMA__; Type: SCHEMA; Schema: -; Owner: -
--



--
-- Name: acid_alive_v8(bigint, bigint); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_alive_v8(p_txn bigint, p_cutoff bigint) RETURNS boolean
    LANGUAGE sql
    AS $$
  SELECT coalesce((SELECT state = 'open' AND last_heartbeat >= p_cutoff FROM txns
                   WHERE txn_id = p_txn FOR UPDATE), false)
$$;


--
-- Name: acid_allocate_v8(bigint, bigint, bigint, text, text); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_allocate_v8(p_txn bigint, p_cutoff bigint, p_table bigint, p_db text, p_name text) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE v_write bigint;
BEGIN
  IF NOT acid_alive_v8(p_txn, p_cutoff) THEN RETURN NULL; END IF;
  PERFORM 1 FROM tables WHERE table_id = p_table AND db_name = p_db AND name = p_name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'table %.% changed', p_db, p_name USING ERRCODE = 'AS001';
  END IF;
  -- one write id per (txn, table), reused by later statements
  SELECT w.write_id INTO v_write FROM txn_write_ids w
    WHERE w.txn_id = p_txn AND w.table_id = p_table;
  IF FOUND THEN RETURN v_write; END IF;
  RETURN acid_new_write_id_v8(p_txn, p_table, p_db || '.' || p_name);
END $$;


--
-- Name: acid_commit_v8(bigint, bigint, bigint, jsonb, jsonb); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_commit_v8(p_txn bigint, p_now bigint, p_cutoff bigint, p_components jsonb, p_history jsonb) RETURNS TABLE(commit_seq bigint, write_ids jsonb)
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_seq bigint;
BEGIN
  IF NOT acid_alive_v8(p_txn, p_cutoff) THEN RETURN; END IF;
  IF EXISTS (SELECT 1 FROM txn_app_versions a WHERE a.txn_id = p_txn) THEN RETURN; END IF;
  -- commits on one table are serialized (first committer wins); others run in parallel
  PERFORM 1 FROM tables t WHERE t.table_id IN (
    SELECT w.table_id FROM txn_write_ids w WHERE w.txn_id = p_txn) ORDER BY t.table_id
    FOR UPDATE;
  IF EXISTS (SELECT 1 FROM acid_offered_v8(p_txn, p_components) o
             LEFT JOIN tables t ON t.table_id = o.table_id
             WHERE o.operation <> 'insert' OR t.table_id IS NULL
                OR o.metadata_version <> t.metadata_version) THEN
    RETURN;
  END IF;
  -- a committed INSERT OVERWRITE above our write id would hide it (sql_txn._hidden_by_overwrite)
  IF EXISTS (SELECT 1 FROM acid_offered_v8(p_txn, p_components) o JOIN components c
               ON c.table_id = o.table_id AND c.part = o.part AND c.operation = 'overwrite'
              AND c.write_id > o.write_id AND c.txn_id <> p_txn
             JOIN txns t ON t.txn_id = c.txn_id AND t.state = 'committed') THEN
    RETURN;
  END IF;
  v_seq := nextval('acid_commit_seqs');
  UPDATE txns SET state = 'committed', commit_seq = v_seq, finished = p_now
    WHERE txns.txn_id = p_txn;
  -- the committed components replace the ones recorded before writing: they are final
  DELETE FROM components c WHERE c.txn_id = p_txn;
  INSERT INTO components (txn_id, table_id, table_name, part, operation, write_id,
                          directories, rows_inserted, rows_deleted, files, bytes)
    SELECT p_txn, o.table_id, o.table_name, o.part, o.operation, o.write_id, o.directories,
           o.rows_inserted, o.rows_deleted, o.files, o.bytes
    FROM acid_offered_v8(p_txn, p_components) o ORDER BY o.n;
  INSERT INTO history (table_id, write_id, txn_id, commit_time, operation, rows_inserted,
                       rows_deleted, files, bytes, partitions)
    SELECT w.table_id, w.write_id, p_txn, p_now, coalesce(h.operation, ''),
           coalesce(h.rows_inserted, 0), coalesce(h.rows_deleted, 0), coalesce(h.files, 0),
           coalesce(h.bytes, 0), coalesce(h.partitions, '[]')
    FROM txn_write_ids w
    LEFT JOIN jsonb_to_recordset(p_history) AS h(table_name text, operation text,
      rows_inserted bigint, rows_deleted bigint, files bigint, bytes bigint, partitions text)
      ON h.table_name = w.table_name
    WHERE w.txn_id = p_txn ORDER BY w.table_name;
  INSERT INTO partitions (table_id, part)
    SELECT DISTINCT o.table_id, o.part FROM acid_offered_v8(p_txn, p_components) o
    WHERE o.part <> '' ON CONFLICT DO NOTHING;
  DELETE FROM locks l WHERE l.txn_id = p_txn;
  RETURN QUERY SELECT v_seq, coalesce(
    (SELECT jsonb_object_agg(w.table_name, w.write_id) FROM txn_write_ids w
     WHERE w.txn_id = p_txn), '{}'::jsonb);
END $$;


--
-- Name: acid_heartbeat_v8(bigint, bigint, bigint); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_heartbeat_v8(p_txn bigint, p_now bigint, p_cutoff bigint) RETURNS boolean
    LANGUAGE sql
    AS $$
  -- false: not open, or timed out (the general path reaps it and reports which)
  WITH beat AS (UPDATE txns SET last_heartbeat = p_now
                WHERE txn_id = p_txn AND state = 'open' AND last_heartbeat >= p_cutoff
                RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM beat)
$$;


--
-- Name: acid_new_write_id_v8(bigint, bigint, text); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_new_write_id_v8(p_txn bigint, p_table bigint, p_name text) RETURNS bigint
    LANGUAGE sql
    AS $$
  -- §12.1: the table's counter row, bumped in one upsert, stays locked until the allocation
  -- commits, so per-table write ids are contiguous (Hive's NEXT_WRITE_ID)
  WITH bumped AS (
    INSERT INTO next_write_id (table_id, next_value) VALUES (p_table, 2)
    ON CONFLICT (table_id) DO UPDATE SET next_value = next_write_id.next_value + 1
    RETURNING next_value - 1 AS write_id)
  INSERT INTO txn_write_ids (txn_id, table_id, table_name, write_id)
    SELECT p_txn, p_table, p_name, write_id FROM bumped RETURNING write_id
$$;


--
-- Name: acid_offered_v8(bigint, jsonb); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_offered_v8(p_txn bigint, p_components jsonb) RETURNS TABLE(n bigint, table_id bigint, table_name text, part text, operation text, write_id bigint, directories text, rows_inserted bigint, rows_deleted bigint, files bigint, bytes bigint, metadata_version bigint)
    LANGUAGE sql STABLE
    AS $$
  -- the offered components, each with the table its write id was allocated on (NULL: none)
  SELECT e.n, w.table_id, c.table_name, c.part, c.operation, c.write_id, c.directories,
         c.rows_inserted, c.rows_deleted, c.files, c.bytes, c.metadata_version
  FROM jsonb_array_elements(p_components) WITH ORDINALITY AS e(item, n)
  CROSS JOIN LATERAL jsonb_to_record(e.item) AS c(table_name text, part text,
    operation text, write_id bigint, directories text, rows_inserted bigint,
    rows_deleted bigint, files bigint, bytes bigint, metadata_version bigint)
  LEFT JOIN txn_write_ids w ON w.txn_id = p_txn AND w.table_name = c.table_name
                            AND w.write_id = c.write_id
$$;


--
-- Name: acid_open_v8(text, text, text, bigint, bigint, bigint, jsonb); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_open_v8(p_kind text, p_user text, p_host text, p_now bigint, p_cutoff bigint, p_gap bigint, p_plans jsonb) RETURNS TABLE(txn_id bigint, snapshot text, write_ids jsonb)
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_id bigint; v_hwm bigint; v_open bigint[]; v_aborted bigint[]; v_snapshot text;
  v_plan jsonb; v_table bigint; v_write bigint; v_dir text; v_ids jsonb := '{}';
  v_floor bigint;
BEGIN
  PERFORM acid_reap_v8(p_now, p_cutoff);
  -- the id first, the snapshot after it: whatever this txn does not see committed, it
  -- lists (an id handed out before ours whose row is not visible yet is a gap: open)
  v_id := nextval('acid_txn_ids');
  SELECT s.hwm, s.open_ids, s.aborted_ids INTO v_hwm, v_open, v_aborted
    FROM acid_snapshot_v8(v_id) s;
  v_snapshot := v_hwm || ':' || coalesce(v_open[1], 9223372036854775807) || ':'
                || array_to_string(v_open, ',') || ':' || array_to_string(v_aborted, ',');
  INSERT INTO txns (txn_id, state, kind, user_name, host, started, last_heartbeat, snapshot,
                    snapshot_commit_seq)
  VALUES (v_id, 'open', p_kind, p_user, p_host, p_now, p_now, v_snapshot,
          (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
           FROM acid_commit_seqs));
  FOR v_plan IN SELECT * FROM jsonb_array_elements(p_plans) LOOP
    v_table := (v_plan->>'table_id')::bigint;
    -- the caller's cached catalog row must still be the table's (not dropped, not replaced)
    PERFORM 1 FROM tables WHERE table_id = v_table AND db_name = v_plan->>'db'
                           AND name = v_plan->>'name';
    IF NOT FOUND THEN
      RAISE EXCEPTION 'table %.% changed', v_plan->>'db', v_plan->>'name'
        USING ERRCODE = 'AS001';
    END IF;
    v_write := acid_new_write_id_v8(v_id, v_table, (v_plan->>'db') || '.' || (v_plan->>'name'));
    -- PlannedWrite.components: statement 0's delta, or the overwrite's base
    v_dir := CASE WHEN v_plan->>'operation' = 'overwrite' THEN 'base_' || acid_pad7_v8(v_write)
                  ELSE 'delta_' || acid_pad7_v8(v_write) || '_' || acid_pad7_v8(v_write)
                       || '_0000' END;
    INSERT INTO components (txn_id, table_id, table_name, part, operation, write_id,
                            directories, rows_inserted, rows_deleted, files, bytes)
      SELECT v_id, v_table, (v_plan->>'db') || '.' || (v_plan->>'name'), p,
             v_plan->>'operation', v_write,
             json_build_array(CASE WHEN p = '' THEN v_dir ELSE p || '/' || v_dir END)::text,
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
  IF v_id - v_floor > 32 THEN
    PERFORM acid_raise_floor_v8(p_now - p_gap, v_id);
  END IF;
  RETURN QUERY SELECT v_id, v_snapshot, v_ids;
END $$;


--
-- Name: acid_pad7_v8(bigint); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_pad7_v8(p bigint) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT CASE WHEN p < 10000000 THEN lpad(p::text, 7, '0')
                                         ELSE p::text END $$;


--
-- Name: acid_raise_floor_v8(bigint, bigint); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_raise_floor_v8(p_dead_before bigint, p_top bigint) RETURNS void
    LANGUAGE plpgsql
    AS $$
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
END $$;


--
-- Name: acid_reap_v8(bigint, bigint); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_reap_v8(p_now bigint, p_cutoff bigint) RETURNS void
    LANGUAGE sql
    AS $$
  -- §14: an open txn without a heartbeat for the timeout is aborted, with its locks
  WITH stale AS (
    UPDATE txns SET state = 'aborted', finished = p_now,
                    abort_reason = 'timed out: no heartbeat within the transaction timeout'
    WHERE state = 'open' AND last_heartbeat < p_cutoff RETURNING txn_id)
  DELETE FROM locks WHERE txn_id IN (SELECT txn_id FROM stale)
$$;


--
-- Name: acid_record_v8(bigint, bigint, bigint, jsonb); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_record_v8(p_txn bigint, p_now bigint, p_cutoff bigint, p_component jsonb) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE o record;
BEGIN
  IF NOT acid_alive_v8(p_txn, p_cutoff) THEN RETURN false; END IF;
  SELECT * INTO o FROM acid_offered_v8(p_txn, jsonb_build_array(p_component));
  IF o.table_id IS NULL OR NOT EXISTS (SELECT 1 FROM tables t WHERE t.table_id = o.table_id)
  THEN
    RETURN false;
  END IF;
  INSERT INTO components (txn_id, table_id, table_name, part, operation, write_id,
                          directories, rows_inserted, rows_deleted, files, bytes)
    SELECT p_txn, o.table_id, o.table_name, o.part, o.operation, o.write_id, o.directories,
           o.rows_inserted, o.rows_deleted, o.files, o.bytes
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
END $$;


--
-- Name: acid_snapshot_v8(bigint); Type: FUNCTION; Schema: __SCHEMA__; Owner: -
--

CREATE FUNCTION __SCHEMA__.acid_snapshot_v8(p_own bigint) RETURNS TABLE(hwm bigint, open_ids bigint[], aborted_ids bigint[])
    LANGUAGE sql STABLE
    AS $$
  -- one statement, so one MVCC snapshot: the hwm, the listed txns and the gaps agree
  WITH top AS (
    SELECT greatest((SELECT coalesce(max(txn_id), 0) FROM txns), coalesce(p_own, 0)) AS hwm,
           (SELECT next_value FROM sequences WHERE name = 'txn_floor') AS floor
  ), listed AS (
    SELECT t.txn_id, t.state FROM txns t, top
    WHERE t.state IN ('open', 'aborted') AND t.txn_id <= top.hwm
      AND t.txn_id IS DISTINCT FROM p_own
  ), gaps AS (
    SELECT g AS txn_id FROM top, generate_series(top.floor + 1, top.hwm) g
    WHERE g IS DISTINCT FROM p_own AND NOT EXISTS (SELECT 1 FROM txns t WHERE t.txn_id = g)
  )
  SELECT top.hwm,
         ARRAY(SELECT txn_id FROM listed WHERE state = 'open' UNION
               SELECT txn_id FROM gaps ORDER BY 1),
         ARRAY(SELECT txn_id FROM listed WHERE state = 'aborted' ORDER BY 1)
  FROM top
$$;


--
-- Name: acid_commit_seqs; Type: SEQUENCE; Schema: __SCHEMA__; Owner: -
--

CREATE SEQUENCE __SCHEMA__.acid_commit_seqs
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: acid_txn_ids; Type: SEQUENCE; Schema: __SCHEMA__; Owner: -
--

CREATE SEQUENCE __SCHEMA__.acid_txn_ids
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: app_versions; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.app_versions (
    table_id bigint NOT NULL,
    app_id text NOT NULL,
    version bigint NOT NULL,
    txn_id bigint NOT NULL,
    commit_time bigint NOT NULL
);


--
-- Name: compaction_outputs; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.compaction_outputs (
    txn_id bigint NOT NULL,
    table_id bigint NOT NULL,
    part text NOT NULL,
    directory text NOT NULL,
    files bigint NOT NULL,
    rows_written bigint NOT NULL,
    bytes bigint NOT NULL,
    file_rows text NOT NULL
);


--
-- Name: compactions; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.compactions (
    compaction_id bigint NOT NULL,
    table_id bigint NOT NULL,
    table_name text NOT NULL,
    part text NOT NULL,
    kind text NOT NULL,
    state text NOT NULL,
    reason text NOT NULL,
    enqueued bigint NOT NULL,
    worker text,
    started bigint,
    heartbeat bigint,
    txn_id bigint,
    highest_write_id bigint,
    compactor_write_ids text,
    next_txn_id bigint,
    compacted bigint,
    finished bigint,
    error text,
    attempts bigint DEFAULT 0 NOT NULL,
    cleaning_started bigint,
    CONSTRAINT compactions_kind_check CHECK ((kind = ANY (ARRAY['minor'::text, 'major'::text])))
);


--
-- Name: compactions_compaction_id_seq; Type: SEQUENCE; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE __SCHEMA__.compactions ALTER COLUMN compaction_id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME __SCHEMA__.compactions_compaction_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: components; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.components (
    component_id bigint NOT NULL,
    txn_id bigint NOT NULL,
    table_id bigint NOT NULL,
    table_name text NOT NULL,
    part text NOT NULL,
    operation text NOT NULL,
    write_id bigint NOT NULL,
    directories text NOT NULL,
    rows_inserted bigint NOT NULL,
    rows_deleted bigint NOT NULL,
    files bigint NOT NULL,
    bytes bigint NOT NULL
);


--
-- Name: components_component_id_seq; Type: SEQUENCE; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE __SCHEMA__.components ALTER COLUMN component_id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME __SCHEMA__.components_component_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: databases; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.databases (
    name text NOT NULL,
    created bigint NOT NULL
);


--
-- Name: history; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.history (
    table_id bigint NOT NULL,
    write_id bigint NOT NULL,
    txn_id bigint NOT NULL,
    commit_time bigint NOT NULL,
    operation text NOT NULL,
    rows_inserted bigint NOT NULL,
    rows_deleted bigint NOT NULL,
    files bigint NOT NULL,
    bytes bigint NOT NULL,
    partitions text NOT NULL
);


--
-- Name: leases; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.leases (
    lease_id bigint NOT NULL,
    table_id bigint NOT NULL,
    snapshot text NOT NULL,
    write_ids text NOT NULL,
    acquired bigint NOT NULL,
    expires bigint NOT NULL
);


--
-- Name: leases_lease_id_seq; Type: SEQUENCE; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE __SCHEMA__.leases ALTER COLUMN lease_id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME __SCHEMA__.leases_lease_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: lock_catalog; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.lock_catalog (
);


--
-- Name: lock_commit; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.lock_commit (
);


--
-- Name: lock_queue; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.lock_queue (
);


--
-- Name: lock_txn; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.lock_txn (
);


--
-- Name: locks; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.locks (
    lock_id bigint NOT NULL,
    txn_id bigint NOT NULL,
    table_id bigint NOT NULL,
    db_name text NOT NULL,
    table_name text NOT NULL,
    part text NOT NULL,
    lock_type text NOT NULL,
    acquired bigint NOT NULL
);


--
-- Name: locks_lock_id_seq; Type: SEQUENCE; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE __SCHEMA__.locks ALTER COLUMN lock_id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME __SCHEMA__.locks_lock_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: meta; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.meta (
    name text NOT NULL,
    value text NOT NULL
);


--
-- Name: next_write_id; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.next_write_id (
    table_id bigint NOT NULL,
    next_value bigint NOT NULL
);


--
-- Name: partitions; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.partitions (
    table_id bigint NOT NULL,
    part text NOT NULL
);


--
-- Name: sequences; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.sequences (
    name text NOT NULL,
    next_value bigint NOT NULL
);


--
-- Name: tables; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.tables (
    table_id bigint NOT NULL,
    db_name text NOT NULL,
    name text NOT NULL,
    schema text NOT NULL,
    partition_schema text NOT NULL,
    bucket_by text NOT NULL,
    buckets bigint NOT NULL,
    properties text NOT NULL,
    location text NOT NULL,
    created bigint NOT NULL,
    metadata_version bigint DEFAULT 0 NOT NULL
);


--
-- Name: tables_table_id_seq; Type: SEQUENCE; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE __SCHEMA__.tables ALTER COLUMN table_id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME __SCHEMA__.tables_table_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: txn_app_versions; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.txn_app_versions (
    txn_id bigint NOT NULL,
    table_id bigint NOT NULL,
    app_id text NOT NULL,
    version bigint NOT NULL
);


--
-- Name: txn_write_ids; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.txn_write_ids (
    txn_id bigint NOT NULL,
    table_id bigint NOT NULL,
    table_name text NOT NULL,
    write_id bigint NOT NULL
);


--
-- Name: txns; Type: TABLE; Schema: __SCHEMA__; Owner: -
--

CREATE TABLE __SCHEMA__.txns (
    txn_id bigint NOT NULL,
    state text NOT NULL,
    kind text NOT NULL,
    user_name text NOT NULL,
    host text NOT NULL,
    started bigint NOT NULL,
    last_heartbeat bigint NOT NULL,
    finished bigint,
    snapshot text NOT NULL,
    snapshot_commit_seq bigint NOT NULL,
    commit_seq bigint,
    abort_reason text,
    CONSTRAINT txns_state_check CHECK ((state = ANY (ARRAY['open'::text, 'committed'::text, 'aborted'::text])))
);


--
-- Data for Name: app_versions; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--



--
-- Data for Name: compaction_outputs; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--



--
-- Data for Name: compactions; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--



--
-- Data for Name: components; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--

INSERT INTO __SCHEMA__.components VALUES (2, 1, 1, 'default.t', '', 'insert', 1, '["delta_0000001_0000001_0000"]', 1, 0, 1, 10);
INSERT INTO __SCHEMA__.components VALUES (3, 2, 1, 'default.t', '', 'insert', 2, '["delta_0000002_0000002_0000"]', 0, 0, 0, 0);


--
-- Data for Name: databases; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--

INSERT INTO __SCHEMA__.databases VALUES ('default', 1795626827864593);


--
-- Data for Name: history; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--

INSERT INTO __SCHEMA__.history VALUES (1, 1, 1, 1795626827892409, 'insert', 1, 0, 1, 10, '[]');


--
-- Data for Name: leases; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--



--
-- Data for Name: lock_catalog; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--



--
-- Data for Name: lock_commit; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--



--
-- Data for Name: lock_queue; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--



--
-- Data for Name: lock_txn; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--



--
-- Data for Name: locks; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--

INSERT INTO __SCHEMA__.locks VALUES (2, 2, 1, 'default', 't', '', 'shared_write', 1795626827917463);


--
-- Data for Name: meta; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--

INSERT INTO __SCHEMA__.meta VALUES ('schema_version', '8');


--
-- Data for Name: next_write_id; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--

INSERT INTO __SCHEMA__.next_write_id VALUES (1, 3);


--
-- Data for Name: partitions; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--



--
-- Data for Name: sequences; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--

INSERT INTO __SCHEMA__.sequences VALUES ('txn', 1);
INSERT INTO __SCHEMA__.sequences VALUES ('commit', 1);
INSERT INTO __SCHEMA__.sequences VALUES ('txn_floor', 0);


--
-- Data for Name: tables; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--

INSERT INTO __SCHEMA__.tables VALUES (1, 'default', 't', '/////6gAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAIAAABEAAAABAAAANT///8AAAEFEAAAABwAAAAEAAAAAAAAAAQAAABuYW1lAAAAAAQABAAEAAAAEAAUAAgABgAHAAwAAAAQABAAAAAAAAECEAAAABwAAAAEAAAAAAAAAAIAAABpZAAACAAMAAgABwAIAAAAAAAAAUAAAAA=', '/////zAAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAAAAAA=', '[]', 0, '{}', '/warehouse/default.db/t', 1795626827864593, 0);


--
-- Data for Name: txn_app_versions; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--



--
-- Data for Name: txn_write_ids; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--

INSERT INTO __SCHEMA__.txn_write_ids VALUES (1, 1, 'default.t', 1);
INSERT INTO __SCHEMA__.txn_write_ids VALUES (2, 1, 'default.t', 2);


--
-- Data for Name: txns; Type: TABLE DATA; Schema: __SCHEMA__; Owner: -
--

INSERT INTO __SCHEMA__.txns VALUES (1, 'committed', 'default', 'v8', 'old', 1795626827867038, 1795626827867038, 1795626827892409, '1:9223372036854775807::', 0, 1, NULL);
INSERT INTO __SCHEMA__.txns VALUES (2, 'open', 'default', 'v8', 'old', 1795626827903964, 1795626827903964, NULL, '2:9223372036854775807::', 1, NULL, NULL);


--
-- Name: acid_commit_seqs; Type: SEQUENCE SET; Schema: __SCHEMA__; Owner: -
--

SELECT pg_catalog.setval('__SCHEMA__.acid_commit_seqs', 1, true);


--
-- Name: acid_txn_ids; Type: SEQUENCE SET; Schema: __SCHEMA__; Owner: -
--

SELECT pg_catalog.setval('__SCHEMA__.acid_txn_ids', 2, true);


--
-- Name: compactions_compaction_id_seq; Type: SEQUENCE SET; Schema: __SCHEMA__; Owner: -
--

SELECT pg_catalog.setval('__SCHEMA__.compactions_compaction_id_seq', 1, false);


--
-- Name: components_component_id_seq; Type: SEQUENCE SET; Schema: __SCHEMA__; Owner: -
--

SELECT pg_catalog.setval('__SCHEMA__.components_component_id_seq', 3, true);


--
-- Name: leases_lease_id_seq; Type: SEQUENCE SET; Schema: __SCHEMA__; Owner: -
--

SELECT pg_catalog.setval('__SCHEMA__.leases_lease_id_seq', 1, false);


--
-- Name: locks_lock_id_seq; Type: SEQUENCE SET; Schema: __SCHEMA__; Owner: -
--

SELECT pg_catalog.setval('__SCHEMA__.locks_lock_id_seq', 2, true);


--
-- Name: tables_table_id_seq; Type: SEQUENCE SET; Schema: __SCHEMA__; Owner: -
--

SELECT pg_catalog.setval('__SCHEMA__.tables_table_id_seq', 1, true);


--
-- Name: app_versions app_versions_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.app_versions
    ADD CONSTRAINT app_versions_pkey PRIMARY KEY (table_id, app_id);


--
-- Name: compaction_outputs compaction_outputs_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.compaction_outputs
    ADD CONSTRAINT compaction_outputs_pkey PRIMARY KEY (txn_id, table_id, directory);


--
-- Name: compactions compactions_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.compactions
    ADD CONSTRAINT compactions_pkey PRIMARY KEY (compaction_id);


--
-- Name: components components_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.components
    ADD CONSTRAINT components_pkey PRIMARY KEY (component_id);


--
-- Name: databases databases_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.databases
    ADD CONSTRAINT databases_pkey PRIMARY KEY (name);


--
-- Name: history history_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.history
    ADD CONSTRAINT history_pkey PRIMARY KEY (table_id, write_id);


--
-- Name: leases leases_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.leases
    ADD CONSTRAINT leases_pkey PRIMARY KEY (lease_id);


--
-- Name: locks locks_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.locks
    ADD CONSTRAINT locks_pkey PRIMARY KEY (lock_id);


--
-- Name: locks locks_txn_id_table_id_part_key; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.locks
    ADD CONSTRAINT locks_txn_id_table_id_part_key UNIQUE (txn_id, table_id, part);


--
-- Name: meta meta_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.meta
    ADD CONSTRAINT meta_pkey PRIMARY KEY (name);


--
-- Name: next_write_id next_write_id_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.next_write_id
    ADD CONSTRAINT next_write_id_pkey PRIMARY KEY (table_id);


--
-- Name: partitions partitions_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.partitions
    ADD CONSTRAINT partitions_pkey PRIMARY KEY (table_id, part);


--
-- Name: sequences sequences_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.sequences
    ADD CONSTRAINT sequences_pkey PRIMARY KEY (name);


--
-- Name: tables tables_db_name_name_key; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.tables
    ADD CONSTRAINT tables_db_name_name_key UNIQUE (db_name, name);


--
-- Name: tables tables_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.tables
    ADD CONSTRAINT tables_pkey PRIMARY KEY (table_id);


--
-- Name: txn_app_versions txn_app_versions_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.txn_app_versions
    ADD CONSTRAINT txn_app_versions_pkey PRIMARY KEY (txn_id, table_id, app_id);


--
-- Name: txn_write_ids txn_write_ids_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.txn_write_ids
    ADD CONSTRAINT txn_write_ids_pkey PRIMARY KEY (txn_id, table_id);


--
-- Name: txn_write_ids txn_write_ids_table_id_write_id_key; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.txn_write_ids
    ADD CONSTRAINT txn_write_ids_table_id_write_id_key UNIQUE (table_id, write_id);


--
-- Name: txns txns_commit_seq_key; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.txns
    ADD CONSTRAINT txns_commit_seq_key UNIQUE (commit_seq);


--
-- Name: txns txns_pkey; Type: CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.txns
    ADD CONSTRAINT txns_pkey PRIMARY KEY (txn_id);


--
-- Name: compaction_outputs_by_table; Type: INDEX; Schema: __SCHEMA__; Owner: -
--

CREATE INDEX compaction_outputs_by_table ON __SCHEMA__.compaction_outputs USING btree (table_id);


--
-- Name: compactions_by_state; Type: INDEX; Schema: __SCHEMA__; Owner: -
--

CREATE INDEX compactions_by_state ON __SCHEMA__.compactions USING btree (state, table_id, part);


--
-- Name: components_by_partition; Type: INDEX; Schema: __SCHEMA__; Owner: -
--

CREATE INDEX components_by_partition ON __SCHEMA__.components USING btree (table_id, part);


--
-- Name: components_by_txn; Type: INDEX; Schema: __SCHEMA__; Owner: -
--

CREATE INDEX components_by_txn ON __SCHEMA__.components USING btree (txn_id);


--
-- Name: leases_by_table; Type: INDEX; Schema: __SCHEMA__; Owner: -
--

CREATE INDEX leases_by_table ON __SCHEMA__.leases USING btree (table_id, expires);


--
-- Name: txns_by_state; Type: INDEX; Schema: __SCHEMA__; Owner: -
--

CREATE INDEX txns_by_state ON __SCHEMA__.txns USING btree (state, last_heartbeat);


--
-- Name: compaction_outputs compaction_outputs_txn_id_fkey; Type: FK CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.compaction_outputs
    ADD CONSTRAINT compaction_outputs_txn_id_fkey FOREIGN KEY (txn_id) REFERENCES __SCHEMA__.txns(txn_id);


--
-- Name: components components_txn_id_fkey; Type: FK CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.components
    ADD CONSTRAINT components_txn_id_fkey FOREIGN KEY (txn_id) REFERENCES __SCHEMA__.txns(txn_id);


--
-- Name: locks locks_txn_id_fkey; Type: FK CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.locks
    ADD CONSTRAINT locks_txn_id_fkey FOREIGN KEY (txn_id) REFERENCES __SCHEMA__.txns(txn_id);


--
-- Name: tables tables_db_name_fkey; Type: FK CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.tables
    ADD CONSTRAINT tables_db_name_fkey FOREIGN KEY (db_name) REFERENCES __SCHEMA__.databases(name);


--
-- Name: txn_app_versions txn_app_versions_txn_id_fkey; Type: FK CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.txn_app_versions
    ADD CONSTRAINT txn_app_versions_txn_id_fkey FOREIGN KEY (txn_id) REFERENCES __SCHEMA__.txns(txn_id);


--
-- Name: txn_write_ids txn_write_ids_txn_id_fkey; Type: FK CONSTRAINT; Schema: __SCHEMA__; Owner: -
--

ALTER TABLE ONLY __SCHEMA__.txn_write_ids
    ADD CONSTRAINT txn_write_ids_txn_id_fkey FOREIGN KEY (txn_id) REFERENCES __SCHEMA__.txns(txn_id);


--
-- PostgreSQL database dump complete
--


