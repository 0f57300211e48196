-- A few rows per append of sink results instead of one per result (store/sqlite
-- resultchunks.go): result_chunks holds, per segment of an append (consecutive results, at
-- most 4096 results or 256 KiB) and per sink with results in it, the sink's results of the
-- segment in one BLOB: result_count payloads made by check.EncodeChunk (one: the payload
-- itself; several: each one's length as a uvarint, then its bytes). When the chunk's IDs are
-- consecutive (result_count = last_id - first_id + 1) a payload is a value; otherwise it is
-- the result's ID less first_id (uvarint) followed by the value. The results of a chunk share
-- its created_at: retention deletes a chunk whole.
-- No foreign key to scenarios (scenarios are never deleted, and every insert takes the
-- scenario's id from the UPDATE of its row in the same transaction), and index entries per
-- chunk, not per result.
-- Up moves each result into a chunk of its own; Down moves every result back, decoding the
-- chunks in SQL (one step per byte of the uvarints).

-- +goose Up
CREATE TABLE result_chunks (
    scenario_id  INTEGER NOT NULL,
    segment_last INTEGER NOT NULL, -- ID of the last result of the segment
    sink         TEXT    NOT NULL,
    first_id     INTEGER NOT NULL,
    last_id      INTEGER NOT NULL,
    result_count INTEGER NOT NULL CHECK (result_count >= 1 AND result_count <= last_id - first_id + 1),
    results      BLOB    NOT NULL,
    created_at   INTEGER NOT NULL,
    UNIQUE (scenario_id, segment_last, sink)
) STRICT;

CREATE INDEX result_chunks_by_sink ON result_chunks (scenario_id, sink, segment_last);
CREATE INDEX result_chunks_created_at ON result_chunks (created_at);

INSERT INTO result_chunks (scenario_id, segment_last, sink, first_id, last_id, result_count, results, created_at)
    SELECT scenario_id, id, sink, id, id, 1, CAST(value AS BLOB), created_at FROM sink_results;

DROP TABLE sink_results;

-- +goose Down
CREATE TABLE sink_results (
    scenario_id INTEGER NOT NULL REFERENCES scenarios (id),
    id          INTEGER NOT NULL,
    sink        TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (scenario_id, id)
) STRICT, WITHOUT ROWID;

CREATE INDEX sink_results_created_at ON sink_results (created_at);

-- step: the reading of one byte (at pos) of chunk c, whose results k were read before it.
-- ph 0 reads a payload's length, ph 1 (chunks without consecutive IDs) the ID offset at the
-- start of a payload that ends before iend; acc and sh are the uvarint read so far. A step
-- that completes a result gives its id and its value's start vs and length vl.
WITH RECURSIVE
    byte (v, h) AS (
        SELECT 0, '00'
        UNION ALL
        SELECT v + 1, printf('%02X', v + 1) FROM byte WHERE v < 255),
    chunk (c, first_id, result_count, dense, results) AS (
        SELECT rowid, first_id, result_count, result_count = last_id - first_id + 1, results
        FROM result_chunks WHERE result_count > 1),
    step (c, k, pos, ph, acc, sh, iend, id, vs, vl) AS (
        SELECT c, 0, 1, 0, 0, 0, 0, NULL, NULL, NULL FROM chunk
        UNION ALL
        SELECT s.c,
            s.k + (b.v < 128 AND (s.ph = 1 OR r.dense)),
            CASE WHEN b.v >= 128 THEN s.pos + 1
                 WHEN s.ph = 1 THEN s.iend
                 WHEN r.dense THEN s.pos + 1 + s.acc + (b.v << s.sh)
                 ELSE s.pos + 1 END,
            CASE WHEN b.v >= 128 THEN s.ph WHEN s.ph = 1 OR r.dense THEN 0 ELSE 1 END,
            CASE WHEN b.v >= 128 THEN s.acc + ((b.v - 128) << s.sh) ELSE 0 END,
            CASE WHEN b.v >= 128 THEN s.sh + 7 ELSE 0 END,
            CASE WHEN b.v < 128 AND s.ph = 0 THEN s.pos + 1 + s.acc + (b.v << s.sh) ELSE s.iend END,
            CASE WHEN b.v >= 128 THEN NULL
                 WHEN s.ph = 1 THEN r.first_id + s.acc + (b.v << s.sh)
                 WHEN r.dense THEN r.first_id + s.k END,
            CASE WHEN b.v >= 128 THEN NULL WHEN s.ph = 1 OR r.dense THEN s.pos + 1 END,
            CASE WHEN b.v >= 128 THEN NULL
                 WHEN s.ph = 1 THEN s.iend - s.pos - 1
                 WHEN r.dense THEN s.acc + (b.v << s.sh) END
        FROM step s
        JOIN chunk r ON r.c = s.c
        JOIN byte b ON b.h = hex(substr(r.results, s.pos, 1))
        WHERE s.k < r.result_count)
INSERT INTO sink_results (scenario_id, id, sink, value, created_at)
    SELECT r.scenario_id, s.id, r.sink, CAST(substr(r.results, s.vs, s.vl) AS TEXT), r.created_at
    FROM step s JOIN result_chunks r ON r.rowid = s.c
    WHERE s.id IS NOT NULL
    UNION ALL
    SELECT scenario_id, first_id, sink, CAST(results AS TEXT), created_at FROM result_chunks
    WHERE result_count = 1;

DROP TABLE result_chunks;
