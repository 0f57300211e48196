// Version history: open a version, compare two (the changed nodes are highlighted on the
// canvas), export one as a JSON file.
import { useEffect, useState } from 'react';
import { api, problemText, type Comparison, type Version } from '../api/client';

type Props = {
  name: string;
  /** Bumped after each save, to reload the history. */
  latestVersion: number;
  onOpen: (version: Version) => void;
  onCompare: (comparison: Comparison, to: Version) => void;
};

export function exportHref(name: string, version?: number): string {
  return `/api/scenarios/${encodeURIComponent(name)}/export` + (version ? `?version=${version}` : '');
}

export function VersionsPanel({ name, latestVersion, onOpen, onCompare }: Props) {
  const [versions, setVersions] = useState<Version[]>([]);
  const [from, setFrom] = useState<number | null>(null);
  const [to, setTo] = useState<number | null>(null);
  const [error, setError] = useState('');

  useEffect(() => {
    let live = true;
    api.GET('/api/scenarios/{name}/versions', { params: { path: { name } } }).then(({ data, error }) => {
      if (!live) return;
      if (error) setError(problemText(error));
      else {
        const list = data.versions ?? [];
        setVersions(list);
        if (list.length >= 2) {
          setFrom(list[1].version);
          setTo(list[0].version);
        }
      }
    });
    return () => {
      live = false;
    };
  }, [name, latestVersion]);

  const open = async (v: number) => {
    const { data, error } = await api.GET('/api/scenarios/{name}/versions/{version}', { params: { path: { name, version: v } } });
    if (error) setError(problemText(error));
    else onOpen(data);
  };

  const compare = async () => {
    if (from === null || to === null) return;
    const [c, v] = await Promise.all([
      api.GET('/api/scenarios/{name}/compare', { params: { path: { name }, query: { from, to } } }),
      api.GET('/api/scenarios/{name}/versions/{version}', { params: { path: { name, version: to } } }),
    ]);
    if (c.error) return setError(problemText(c.error));
    if (v.error) return setError(problemText(v.error));
    onCompare(c.data, v.data);
  };

  return (
    <div className="versions" data-testid="versions">
      {error && <div className="field-error">{error}</div>}
      {versions.length >= 2 && (
        <div className="row compare-row">
          compare
          <select value={from ?? ''} onChange={(e) => setFrom(Number(e.target.value))} data-testid="compare-from">
            {versions.map((v) => (
              <option key={v.version} value={v.version}>
                v{v.version}
              </option>
            ))}
          </select>
          with
          <select value={to ?? ''} onChange={(e) => setTo(Number(e.target.value))} data-testid="compare-to">
            {versions.map((v) => (
              <option key={v.version} value={v.version}>
                v{v.version}
              </option>
            ))}
          </select>
          <button type="button" onClick={compare} data-testid="compare">
            Compare
          </button>
        </div>
      )}
      <ul className="version-list">
        {versions.map((v) => (
          <li key={v.version} data-testid={`version-${v.version}`}>
            <div>
              <b>v{v.version}</b> <span className="muted">{v.author}</span> <span className="muted small">{v.createdAt ? new Date(v.createdAt).toLocaleString() : ''}</span>
            </div>
            <div className="comment">{v.comment || <span className="muted">no comment</span>}</div>
            <div className="row">
              <button type="button" className="small" onClick={() => open(v.version)}>
                Open
              </button>
              <a className="button small" href={exportHref(name, v.version)} download={`${name}-v${v.version}.json`}>
                Export
              </a>
            </div>
          </li>
        ))}
      </ul>
    </div>
  );
}

export function ComparisonView({ comparison, onClose }: { comparison: Comparison; onClose: () => void }) {
  const diffs = comparison.differences ?? [];
  return (
    <div className="comparison" data-testid="comparison">
      <div className="row">
        <b>
          v{comparison.from} → v{comparison.to}
        </b>
        <button type="button" className="small" onClick={onClose}>
          Clear
        </button>
      </div>
      {comparison.identical && <div>The versions differ at most in layout.</div>}
      <ul>
        {diffs.map((d, i) => (
          <li key={i} className={`diff diff-${d.kind}`}>
            {d.kind} {d.nodeId && <b>{d.nodeId}</b>} {d.fields && d.fields.length > 0 && <span className="muted">({d.fields.join(', ')})</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}
