-- Sliding 1 h window at 60 s precision (docs/semantics.md §3, §4): for every flight, the
-- flights of the same origin whose minute slice floor(ms / 60000) is one of the
-- 60 slices ending with this flight's slice, and that had arrived (line <= this
-- line). Key: line (the n-th result of the run is the n-th flight).
SELECT f.line,
       f.origin,
       f.date,
       f.ts_ms AS "eventTime",
       (SELECT count(*)
          FROM flights g
         WHERE g.origin = f.origin
           AND g.ts_ms / 60000 BETWEEN f.ts_ms / 60000 - 59 AND f.ts_ms / 60000
           AND g.line <= f.line) AS "flightsLastHour"
FROM flights f
ORDER BY f.line
