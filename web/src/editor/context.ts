import { createContext, useContext } from 'react';
import type { Aggregator, Kind, Problem, Suggestion } from '../api/client';

/** Per node id, what the test run or the running deployment counted. */
export type NodeCounts = Record<string, number>;

/** How a node changed in a compared version. */
export type DiffMark = 'added' | 'changed';

export type EditorContextValue = {
  kinds: Map<string, Kind>;
  aggregators: Aggregator[];
  /** Validation errors per node id. */
  errors: Map<string, Problem[]>;
  /** Per-node counts of the last test run, if any. */
  testCounts?: NodeCounts;
  /** Per-node counts of the running deployment, if any. */
  liveCounts?: NodeCounts;
  diff: Map<string, DiffMark>;
  suggest: (nodeId: string, text: string, caret: number) => Promise<Suggestion[]>;
};

export const EditorContext = createContext<EditorContextValue | null>(null);

export function useEditorContext(): EditorContextValue {
  const v = useContext(EditorContext);
  if (!v) throw new Error('useEditorContext outside the editor');
  return v;
}
