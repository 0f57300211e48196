import { describe, expect, it } from 'vitest';
import type { ProblemDetails } from '../api/client';
import { initialSession, sessionReducer, type Session, type SessionAction } from './session';

const run = (s: Session, ...a: SessionAction[]) => a.reduce(sessionReducer, s);
const conflict = { baseVersion: 4, latest: { version: 5 }, attempted: { version: 5 } } as unknown as NonNullable<ProblemDetails['conflict']>;

describe('sessionReducer', () => {
  const loaded = run(initialSession, { type: 'loaded', version: 4, archived: false, savedJson: '{}' }, { type: 'save-bar', open: true }, { type: 'comment', comment: 'why' });
  it('a conflict closes the save bar and keeps the comment; merging stands on the latest version', () => {
    const c = run(loaded, { type: 'opened', version: 3 }, { type: 'conflict', conflict });
    expect(c).toMatchObject({ conflict, saveOpen: false, comment: 'why', viewing: 3 });
    const merged = run(c, { type: 'rebased', version: 5, savedJson: '{"v":5}', status: 'merged' });
    expect(merged).toMatchObject({ conflict: null, baseVersion: 5, savedJson: '{"v":5}', viewing: null, status: 'merged' });
  });
  it('a save moves on to its version and clears the bar, the comment and the version shown', () => {
    const s = run(loaded, { type: 'opened', version: 2 }, { type: 'saved', version: 5, savedJson: '{"x":1}' });
    expect(s).toMatchObject({ baseVersion: 5, savedJson: '{"x":1}', saveOpen: false, comment: '', viewing: null, status: 'saved version 5' });
  });
  it('opening a version says what saving it does, and drops a comparison', () => {
    const s = run(loaded, { type: 'compared', comparison: { from: 1, to: 2, identical: false, scenario: 'x', differences: [] }, moved: [] }, { type: 'opened', version: 2 });
    expect(s.comparison).toBeNull();
    expect(s.status).toBe('showing version 2; saving makes it a new version on top of v4');
  });
});
