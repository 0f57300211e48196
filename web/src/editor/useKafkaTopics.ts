// The topics of the server's Kafka brokers, for the topic field of Kafka sources and sinks.
import { useEffect, useState } from 'react';
import { api } from '../api/client';

/**
 * The brokers' topic names (GET /api/kafka/topics), fetched when enabled turns true; empty
 * until they arrive, and silently empty when the server cannot list them (503: no brokers, or
 * they do not answer) or the request fails.
 */
export function useKafkaTopics(enabled: boolean): string[] {
  const [topics, setTopics] = useState<string[]>([]);
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    api
      .GET('/api/kafka/topics')
      .then(({ data }) => {
        if (live) setTopics(data?.topics ?? []);
      })
      .catch(() => {
        /* no suggestions */
      });
    return () => {
      live = false;
    };
  }, [enabled]);
  return enabled ? topics : [];
}
