// The editor's state around the document: which saved version it stands on, what is shown in
// the side panel, the save bar, a save conflict and the status line. One reducer, so that each
// event (a load, a save, a conflict, opening or merging a version) sets all it touches at once.
import type { Comparison, ProblemDetails } from '../api/client';

export type Tab = 'node' | 'problems' | 'history' | 'test' | 'deploy';

export type Session = {
  loaded: boolean;
  loadError: string;
  /** The saved version the canvas is based on: a save makes the next version on top of it. */
  baseVersion: number;
  archived: boolean;
  /** The graph as saved (JSON): the canvas is dirty when it differs. */
  savedJson: string;
  /** The version shown on the canvas, when one was opened from the history. */
  viewing: number | null;
  tab: Tab;
  comparison: { comparison: Comparison; moved: string[] } | null;
  conflict: NonNullable<ProblemDetails['conflict']> | null;
  saveOpen: boolean;
  comment: string;
  status: string;
};

export type SessionAction =
  | { type: 'loaded'; version: number; archived: boolean; savedJson: string }
  | { type: 'load-failed'; error: string }
  | { type: 'tab'; tab: Tab }
  | { type: 'status'; status: string }
  | { type: 'save-bar'; open: boolean }
  | { type: 'comment'; comment: string }
  | { type: 'saved'; version: number; savedJson: string }
  | { type: 'conflict'; conflict: NonNullable<ProblemDetails['conflict']> | null }
  /** The canvas now holds version `version` as saved (a conflict's latest opened), or a merge on top of it (savedJson its graph). */
  | { type: 'rebased'; version: number; savedJson: string; status: string }
  | { type: 'opened'; version: number }
  | { type: 'compared'; comparison: Comparison; moved: string[] }
  | { type: 'clear-comparison' };

export const initialSession: Session = {
  loaded: false,
  loadError: '',
  baseVersion: 0,
  archived: false,
  savedJson: '',
  viewing: null,
  tab: 'node',
  comparison: null,
  conflict: null,
  saveOpen: false,
  comment: '',
  status: '',
};

export function sessionReducer(s: Session, a: SessionAction): Session {
  switch (a.type) {
    case 'loaded':
      return { ...s, loaded: true, baseVersion: a.version, archived: a.archived, savedJson: a.savedJson };
    case 'load-failed':
      return { ...s, loadError: a.error };
    case 'tab':
      return { ...s, tab: a.tab };
    case 'status':
      return { ...s, status: a.status };
    case 'save-bar':
      return { ...s, saveOpen: a.open };
    case 'comment':
      return { ...s, comment: a.comment };
    case 'saved':
      return { ...s, baseVersion: a.version, savedJson: a.savedJson, conflict: null, saveOpen: false, comment: '', viewing: null, status: `saved version ${a.version}` };
    case 'conflict':
      // The conflict view takes over from the save bar; the comment is kept for the next save.
      return { ...s, conflict: a.conflict, saveOpen: a.conflict ? false : s.saveOpen, status: a.conflict ? '' : s.status };
    case 'rebased':
      return { ...s, baseVersion: a.version, savedJson: a.savedJson, viewing: null, conflict: null, status: a.status };
    case 'opened':
      return { ...s, viewing: a.version, comparison: null, status: `showing version ${a.version}; saving makes it a new version on top of v${s.baseVersion}` };
    case 'compared':
      return { ...s, comparison: { comparison: a.comparison, moved: a.moved } };
    case 'clear-comparison':
      return { ...s, comparison: null };
  }
}
