import { createContext, useContext } from 'react';
import type { Aggregator, Kind, Problem, Suggestion } from '../api/client';

/** Per node id, what the test run or the running deployment counted. */
export type NodeCounts = Record<string, number>;

/** An aggregate's late events: fully late (dropped from, or routed past, every window they
 * belonged to) and partly late (dropped from some windows, counted in others). */
export type LateCount = { late: number; partlyLate: number };

/** Per node id, late events, for the nodes that had any. */
export type NodeLateCounts = Record<string, LateCount>;

/** How a node changed in a compared version. */
export type DiffMark = 'added' | 'changed' | 'moved';

export type EditorContextValue = {
  kinds: Map<string, Kind>;
  aggregators: Aggregator[];
  /** Validation errors per node id. */
  errors: Map<string, Problem[]>;
  /** Per-node counts of the last test run, if any. */
  testCounts?: NodeCounts;
  /** Per-node counts of the running deployment, if any. */
  liveCounts?: NodeCounts;
  /** Late events per aggregate in the last test run, for those that had any. */
  testLate?: NodeLateCounts;
  /** Late events per aggregate of the running deployment, for those that had any. */
  liveLate?: NodeLateCounts;
  /** Per-event errors per node in the last test run / the running deployment, for nodes that had any. */
  testErrors?: NodeCounts;
  liveErrors?: NodeCounts;
  /** True when the graph changed since the last test run: its counts are of another graph. */
  testStale: boolean;
  diff: Map<string, DiffMark>;
  suggest: (nodeId: string, text: string, caret: number) => Promise<Suggestion[]>;
};

export const EditorContext = createContext<EditorContextValue | null>(null);

export function useEditorContext(): EditorContextValue {
  const v = useContext(EditorContext);
  if (!v) throw new Error('useEditorContext outside the editor');
  return v;
}
