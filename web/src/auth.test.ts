import { describe, expect, it } from 'vitest';
import { problemText } from './api/client';
import { needsText, roleAllows } from './auth';

describe('roles', () => {
  it('include one another', () => {
    expect(roleAllows('viewer', 'viewer')).toBe(true);
    expect(roleAllows('viewer', 'editor')).toBe(false);
    expect(roleAllows('editor', 'editor')).toBe(true);
    expect(roleAllows('editor', 'deployer')).toBe(false);
    expect(roleAllows('deployer', 'editor')).toBe(true);
    expect(roleAllows('admin', 'deployer')).toBe(true);
    expect(roleAllows('', 'viewer')).toBe(false);
    expect(roleAllows(undefined, 'viewer')).toBe(false);
    expect(roleAllows('superuser', 'viewer')).toBe(false);
  });
  it('say what is needed', () => {
    expect(needsText('Deploying', 'deployer', 'viewer')).toBe('Deploying needs the deployer role; you have viewer');
  });
});

describe('a 403 in words', () => {
  it('names the role needed and the one held', () => {
    const p = { status: 403, code: 'forbidden', title: 'Forbidden', detail: 'POST /api/scenarios/{name}/deploy needs the deployer role; watcher has viewer' };
    expect(problemText(p)).toBe('Not allowed: this needs the deployer role; you have viewer');
  });
  it('keeps other details as they are', () => {
    expect(problemText({ status: 409, code: 'deployment-active', detail: 'already running' })).toBe('already running');
  });
});
