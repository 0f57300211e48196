-- Typed tables for the oracle queries, derived in SQL from the raw lines that
-- examples/oracle_test.go copies in unparsed: flights_raw(line, doc) and
-- access_log_raw(line, doc), doc being one line of the .ndjson file as text and
-- line its 1-based line number in the file (arrival order).
--
-- Every time is computed here, independently of the engine: flights' date is a
-- wall time without zone that the scenarios read as UTC, and access_log's ts is
-- RFC 3339. The session time zone must be UTC (the test sets it and checks it).

CREATE TABLE flights AS
SELECT r.line,
       d.date,
       (r.doc::jsonb ->> 'delay')::int    AS delay,
       (r.doc::jsonb ->> 'distance')::int AS distance,
       r.doc::jsonb ->> 'origin'          AS origin,
       r.doc::jsonb ->> 'destination'     AS destination,
       d.ts,
       (extract(epoch FROM d.ts) * 1000)::bigint AS ts_ms
FROM flights_raw r,
     LATERAL (SELECT r.doc::jsonb ->> 'date' AS date,
                     to_timestamp(r.doc::jsonb ->> 'date', 'YYYY/MM/DD HH24:MI') AS ts) d;

CREATE INDEX ON flights (origin, (ts_ms / 60000), line);

CREATE TABLE access_log AS
SELECT r.line,
       (r.doc::jsonb ->> 'ts')::timestamptz AS ts,
       (extract(epoch FROM (r.doc::jsonb ->> 'ts')::timestamptz) * 1000)::bigint AS ts_ms,
       r.doc::jsonb ->> 'client'         AS client,
       r.doc::jsonb ->> 'method'         AS method,
       r.doc::jsonb ->> 'path'           AS path,
       (r.doc::jsonb ->> 'status')::int  AS status,
       (r.doc::jsonb ->> 'bytes')::bigint AS bytes,  -- JSON null gives SQL NULL
       r.doc::jsonb ->> 'referrer'       AS referrer,
       r.doc::jsonb ->> 'agent'          AS agent
FROM access_log_raw r;

ANALYZE flights;
ANALYZE access_log;
