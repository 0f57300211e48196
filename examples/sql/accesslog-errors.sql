-- Hopping windows [k * 60 s, k * 60 s + 300 s), aligned to the epoch; only
-- windows holding at least one event. The candidate k around each event are
-- generated generously and kept only when the window really contains the event.
-- clients is the exact distinct count (the engine's is a HyperLogLog estimate).
-- Key: start.
SELECT k * 60000                                   AS start,
       k * 60000 + 300000                          AS "end",
       count(*)                                    AS requests,
       count(*) FILTER (WHERE a.status >= 500)     AS errors,
       count(DISTINCT a.client)                    AS clients
FROM access_log a,
     generate_series(a.ts_ms / 60000 - 6, a.ts_ms / 60000 + 1) AS k
WHERE a.ts_ms >= k * 60000
  AND a.ts_ms <  k * 60000 + 300000
GROUP BY k
