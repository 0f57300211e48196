// The scenario list: search, create, import a JSON file, archive and unarchive, open.
import { useCallback, useEffect, useState } from 'react';
import { api, problemText, type Schemas, type ScenarioSummary } from './api/client';
import { needsText, UserMenu, useAuth } from './auth';
import { normalizeGraph } from './graph/model';

export function scenarioHref(name: string): string {
  return `#/scenarios/${encodeURIComponent(name)}`;
}

const emptyGraph = { nodes: [], edges: [] };

function DeploymentStatus({ d, archived }: { d: Schemas['ScenarioDeployment'] | undefined; archived: boolean }) {
  if (!d || d.status === 'NOT_DEPLOYED') return <span className="muted">{archived ? 'archived' : 'not deployed'}</span>;
  return (
    // paused: RUNNING in the store, not run by this server (safe mode, --no-resume).
    <span className={`badge status-${d.paused ? 'PAUSED' : d.status}`} title={d.reason}>
      {d.paused ? 'paused' : d.status.toLowerCase()}
      {d.deployment ? ` v${d.deployment.version}` : ''}
    </span>
  );
}

export function ScenarioList() {
  const { can, me } = useAuth();
  const canEdit = can('editor');
  const [search, setSearch] = useState('');
  const [showArchived, setShowArchived] = useState(false);
  const [list, setList] = useState<ScenarioSummary[] | null>(null);
  // next: the after of the list's next page, when more scenarios remain.
  const [next, setNext] = useState<string | undefined>(undefined);
  const [error, setError] = useState('');
  const [newName, setNewName] = useState('');
  const [importName, setImportName] = useState('');
  const [importFile, setImportFile] = useState<File | null>(null);

  // The list comes a page at a time (the server's 100 by default): load reads the first page,
  // more the next one, after the last name shown.
  const page = useCallback(
    (after?: string) => api.GET('/api/scenarios', { params: { query: { search: search || undefined, archived: showArchived ? 'any' : 'false', after } } }),
    [search, showArchived],
  );

  const load = useCallback(async () => {
    const { data, error } = await page();
    if (error) return setError(problemText(error));
    setList(data.scenarios ?? []);
    setNext(data.next);
  }, [page]);

  const more = async () => {
    if (!next) return;
    const { data, error } = await page(next);
    if (error) return setError(problemText(error));
    setList((l) => [...(l ?? []), ...(data.scenarios ?? [])]);
    setNext(data.next);
  };

  useEffect(() => {
    const t = setTimeout(load, 150);
    return () => clearTimeout(t);
  }, [load]);

  const create = async (e: React.FormEvent) => {
    e.preventDefault();
    const name = newName.trim();
    if (!name) return;
    const { error } = await api.POST('/api/scenarios', { body: { name, graph: emptyGraph, comment: 'created' } });
    if (error) return setError(problemText(error));
    location.hash = scenarioHref(name);
  };

  // An import whose name is an existing scenario's waits for the author to say it is meant as
  // that scenario's next version (before, it became one without a word).
  const [importInto, setImportInto] = useState<{ name: string; graph: unknown; latest: number } | null>(null);

  const importScenario = async (e: React.FormEvent) => {
    e.preventDefault();
    if (!importFile) return;
    const name = (importName || importFile.name.replace(/(-v\d+)?\.json$/i, '')).trim();
    let graph: unknown;
    try {
      graph = normalizeGraph(JSON.parse(await importFile.text()));
    } catch (err) {
      return setError(`${importFile.name} is not JSON: ${(err as Error).message}`);
    }
    await importNew(name, graph);
  };

  // importNew creates scenario name with graph as its version 1 (create, not import: an import
  // goes on top of a scenario of the name without a word); when one of the name exists (409),
  // it asks first (importInto).
  const importNew = async (name: string, graph: unknown) => {
    if (!importFile) return;
    const { error, response } = await api.POST('/api/scenarios', {
      body: { name, graph: graph as Record<string, unknown>, comment: `imported from ${importFile.name}` },
    });
    if (response.status === 409) {
      const { data: existing, error: getError } = await api.GET('/api/scenarios/{name}', { params: { path: { name } } });
      if (getError) return setError(problemText(getError));
      return setImportInto({ name, graph, latest: existing.scenario.latestVersion });
    }
    if (error) return setError(problemText(error));
    const { data: check } = await api.POST('/api/validation', { body: { graph: graph as Record<string, unknown> } });
    done(name, 1, check?.errors?.length ?? 0);
  };

  // done clears the import form and reloads the list, saying when the import has errors.
  const done = (name: string, version: number, errors: number) => {
    setError(errors > 0 ? `imported "${name}" v${version}; it has ${errors} validation errors` : '');
    setImportFile(null);
    setImportName('');
    load();
  };

  // sendImport imports graph as the next version of scenario name, on top of version base (409
  // when it is no longer the latest: someone saved meanwhile).
  const sendImport = async (name: string, graph: unknown, base: number) => {
    if (!importFile) return;
    const { data, error } = await api.POST('/api/scenarios/{name}/import', {
      params: { path: { name }, query: { comment: `imported from ${importFile.name}`, baseVersion: base } },
      body: graph as Record<string, unknown>,
    });
    setImportInto(null);
    if (error) return setError(problemText(error));
    done(name, data.version.version, data.validation.valid ? 0 : (data.validation.errors?.length ?? 0));
  };

  const setArchived = async (name: string, archived: boolean) => {
    const op = archived ? '/api/scenarios/{name}/archive' : '/api/scenarios/{name}/unarchive';
    const { error } = await api.POST(op, { params: { path: { name } } });
    if (error) setError(problemText(error));
    load();
  };

  return (
    <div className="page scenario-list">
      <header className="toolbar">
        <h2>Scenarios</h2>
        <span className="spacer" />
        {can('admin') && (
          <a href="#/audit" data-testid="audit-link">
            Audit log
          </a>
        )}
        <a href="/api/docs" className="muted">
          API docs
        </a>
        <UserMenu />
      </header>
      <div className="list-tools">
        <input type="search" placeholder="Search by name" value={search} onChange={(e) => setSearch(e.target.value)} data-testid="search" />
        <label>
          <input type="checkbox" checked={showArchived} onChange={(e) => setShowArchived(e.target.checked)} data-testid="show-archived" /> show archived
        </label>
        {!canEdit && <span className="muted small" data-testid="read-only">{needsText('Creating, importing or archiving', 'editor', me.role)}.</span>}
        {canEdit && (
        <form onSubmit={create} className="row">
          <input placeholder="New scenario name" value={newName} onChange={(e) => setNewName(e.target.value)} data-testid="new-name" />
          <button type="submit" className="primary" disabled={!newName.trim()} data-testid="create">
            Create
          </button>
        </form>
        )}
        {canEdit && (
        <form onSubmit={importScenario} className="row">
          <input type="file" accept=".json,application/json" onChange={(e) => setImportFile(e.target.files?.[0] ?? null)} data-testid="import-file" />
          <input placeholder="as name (default: file name)" value={importName} onChange={(e) => setImportName(e.target.value)} data-testid="import-name" />
          <button type="submit" disabled={!importFile} data-testid="import">
            Import
          </button>
        </form>
        )}
      </div>
      {importInto && (
        <div className="row" data-testid="import-into">
          <span>
            A scenario named <b>{importInto.name}</b> exists (latest v{importInto.latest}). Import the file as its v{importInto.latest + 1}?
          </span>
          <button type="button" className="primary" onClick={() => sendImport(importInto.name, importInto.graph, importInto.latest)} data-testid="import-into-confirm">
            Import as v{importInto.latest + 1}
          </button>
          <button type="button" onClick={() => setImportInto(null)}>
            Cancel
          </button>
        </div>
      )}
      {error && (
        <div className="field-error" data-testid="list-error">
          {error}
        </div>
      )}
      <table className="scenarios" data-testid="scenarios">
        <thead>
          <tr>
            <th>name</th>
            <th>version</th>
            <th>status</th>
            <th>modified</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {list?.map((s) => (
            <tr key={s.name} className={s.archived ? 'archived' : ''} data-testid={`scenario-${s.name}`}>
              <td>
                <a href={scenarioHref(s.name)}>{s.name}</a>
              </td>
              <td>v{s.latestVersion}</td>
              <td data-testid="deployment-status">
                <DeploymentStatus d={s.deploymentStatus} archived={s.archived} />
              </td>
              <td className="muted small">
                {new Date(s.modifiedAt).toLocaleString()} by {s.modifiedBy}
              </td>
              <td>
                {canEdit && (
                  <button type="button" className="small" onClick={() => setArchived(s.name, !s.archived)}>
                    {s.archived ? 'Unarchive' : 'Archive'}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {next && (
        <button type="button" onClick={more} data-testid="more-scenarios">
          Show more
        </button>
      )}
      {list && list.length === 0 && <p className="muted">No scenarios{search ? ` match "${search}"` : ''}.</p>}
    </div>
  );
}
