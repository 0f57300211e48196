import { useEffect, useMemo, useRef, useState } from 'react';
import { api, type Problem, type ValidationResult } from '../api/client';

/**
 * The validation of the graph (JSON), asked 250 ms after it last changed, dropping answers to
 * older graphs; current is false while the graph has changed since the answer, so that a field
 * does not show messages about text no longer in it.
 */
export function useValidation(graphJson: string, enabled: boolean) {
  const [validation, setValidation] = useState<ValidationResult | null>(null);
  const [validatedJson, setValidatedJson] = useState('');
  const seqRef = useRef(0);
  useEffect(() => {
    if (!enabled) return;
    const seq = ++seqRef.current;
    const t = setTimeout(async () => {
      const { data } = await api.POST('/api/validation', { body: { graph: JSON.parse(graphJson) } });
      if (seq === seqRef.current && data) {
        setValidation(data);
        setValidatedJson(graphJson);
      }
    }, 250);
    return () => clearTimeout(t);
  }, [graphJson, enabled]);

  const errorsByNode = useMemo(() => {
    const m = new Map<string, Problem[]>();
    for (const p of validation?.errors ?? []) {
      if (!p.nodeId) continue;
      const list = m.get(p.nodeId) ?? [];
      list.push(p);
      m.set(p.nodeId, list);
    }
    return m;
  }, [validation]);

  return { validation, errorsByNode, current: validatedJson === graphJson };
}
