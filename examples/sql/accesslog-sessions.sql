-- Sessions per client by gaps and islands on event time: sorted by ts, a new
-- session starts at a client's first event and wherever the gap to the
-- previous event is more than 30 min (events at most 30 min apart share a
-- session: sessions that touch merge). A session is [first ts, last ts + 30 min).
-- First/Last path: by ts, ties by arrival (line): earliest line first, latest
-- line last. Sum of bytes ignores nulls; all-null gives 0.
-- Key: (client, start).
WITH ordered AS (
  SELECT a.*,
         CASE WHEN lag(ts) OVER w IS NULL OR ts - lag(ts) OVER w > interval '30 minutes'
              THEN 1 ELSE 0 END AS starts_session
    FROM access_log a
  WINDOW w AS (PARTITION BY client ORDER BY ts, line)
), numbered AS (
  SELECT o.*,
         sum(starts_session) OVER (PARTITION BY client ORDER BY ts, line
                                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS session
    FROM ordered o
)
SELECT client,
       (extract(epoch FROM min(ts)) * 1000)::bigint                                AS start,
       (extract(epoch FROM max(ts) + interval '30 minutes') * 1000)::bigint        AS "end",
       count(*)                                                                    AS requests,
       coalesce(sum(bytes), 0)::bigint                                             AS bytes,
       (array_agg(path ORDER BY ts, line))[1]                                      AS "firstPath",
       (array_agg(path ORDER BY ts DESC, line DESC))[1]                            AS "lastPath",
       count(DISTINCT path)                                                        AS "distinctPaths"
FROM numbered
GROUP BY client, session
