-- Tumbling 1 h windows per origin, aligned to UTC hours: [start, start + 1 h).
-- Key: (origin, windowStart).
SELECT origin,
       (extract(epoch FROM date_trunc('hour', ts)) * 1000)::bigint                       AS "windowStart",
       (extract(epoch FROM date_trunc('hour', ts) + interval '1 hour') * 1000)::bigint   AS "windowEnd",
       count(*)                                                                          AS flights,
       avg(delay)::float8                                                                AS "avgDelay",
       max(delay)::bigint                                                                AS "maxDelay",
       count(*) FILTER (WHERE delay > 15)                                                AS delayed
FROM flights
GROUP BY origin, date_trunc('hour', ts)
