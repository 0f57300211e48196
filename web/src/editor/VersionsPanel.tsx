// Version history: open a version, compare two (the changed nodes are highlighted on the
// canvas, and each change is listed field by field, expressions in a merge view), export one as
// a JSON file.
import { useEffect, useState } from 'react';
import { api, problemText, type Comparison, type Difference, type Version } from '../api/client';
import { fieldChanges, fieldsOf, movedNodes } from '../graph/diff';
import { normalizeGraph, type ScenarioEdge } from '../graph/model';
import { FieldDiff } from './FieldDiff';

type Props = {
  name: string;
  /** Bumped after each save, to reload the history. */
  latestVersion: number;
  onOpen: (version: Version) => void;
  /** moved: the nodes in both versions whose position changed. */
  onCompare: (comparison: Comparison, to: Version, moved: string[]) => void;
};

export function exportHref(name: string, version?: number): string {
  return `/api/scenarios/${encodeURIComponent(name)}/export` + (version ? `?version=${version}` : '');
}

export function VersionsPanel({ name, latestVersion, onOpen, onCompare }: Props) {
  const [versions, setVersions] = useState<Version[]>([]);
  // older: the before of the history's next page (100 versions a page), when older ones remain.
  const [older, setOlder] = useState<number | undefined>(undefined);
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
        setOlder(data.next || undefined);
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

  const more = async () => {
    if (!older) return;
    const { data, error } = await api.GET('/api/scenarios/{name}/versions', { params: { path: { name }, query: { before: older } } });
    if (error) return setError(problemText(error));
    setVersions((l) => [...l, ...(data.versions ?? [])]);
    setOlder(data.next || undefined);
  };

  const open = async (v: number) => {
    const { data, error } = await api.GET('/api/scenarios/{name}/versions/{version}', { params: { path: { name, version: v } } });
    if (error) setError(problemText(error));
    else onOpen(data);
  };

  const compare = async () => {
    if (from === null || to === null) return;
    const [c, v, f] = await Promise.all([
      api.GET('/api/scenarios/{name}/compare', { params: { path: { name }, query: { from, to } } }),
      api.GET('/api/scenarios/{name}/versions/{version}', { params: { path: { name, version: to } } }),
      api.GET('/api/scenarios/{name}/versions/{version}', { params: { path: { name, version: from } } }),
    ]);
    if (c.error) return setError(problemText(c.error));
    if (v.error) return setError(problemText(v.error));
    if (f.error) return setError(problemText(f.error));
    onCompare(c.data, v.data, movedNodes(normalizeGraph(f.data.graph), normalizeGraph(v.data.graph)));
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
      {older && (
        <button type="button" className="small" onClick={more} data-testid="older-versions">
          Show older versions
        </button>
      )}
    </div>
  );
}

function edgeText(e: unknown): string {
  const x = e as ScenarioEdge | undefined;
  if (!x) return '';
  const cond = x.edgeType?.condition?.expression;
  return `${x.from} → ${x.to}${x.edgeType ? ` (${x.edgeType.type}${cond ? `: ${cond}` : ''})` : ''}`;
}

const kindText: Record<Difference['kind'], string> = {
  'properties-changed': 'scenario properties changed',
  'node-added': 'node added',
  'node-removed': 'node removed',
  'node-changed': 'node changed',
  'edge-added': 'edge added',
  'edge-removed': 'edge removed',
  'edges-reordered': 'cases reordered',
};

/** One difference, with its fields: what changed from what to what. */
function DifferenceView({ d }: { d: Difference }) {
  let body: React.ReactNode = null;
  if (d.kind === 'node-changed' || d.kind === 'properties-changed') {
    body = fieldChanges(d.before as object, d.after as object).map((c) => <FieldDiff key={c.label} {...c} />);
  } else if (d.kind === 'node-added' || d.kind === 'node-removed') {
    // A named element's name is its key: shown by its label, not as a field of its own.
    const fields = [...fieldsOf((d.kind === 'node-added' ? d.after : d.before) as object).values()].filter((f) => !(f.path.at(-1) === 'name' && typeof f.path.at(-2) === 'object'));
    body = fields.map((f) => <FieldDiff key={f.label} label={f.label} before={d.kind === 'node-removed' ? f.value : undefined} after={d.kind === 'node-added' ? f.value : undefined} expression={f.expression} />);
  } else if (d.kind === 'edge-added' || d.kind === 'edge-removed') {
    body = <FieldDiff label="edge" before={d.kind === 'edge-removed' ? edgeText(d.before) : undefined} after={d.kind === 'edge-added' ? edgeText(d.after) : undefined} expression={false} />;
  } else if (d.kind === 'edges-reordered') {
    const list = (v: unknown) => ((v as ScenarioEdge[] | undefined) ?? []).map(edgeText).join('; ');
    body = <FieldDiff label="cases, in order" before={list(d.before)} after={list(d.after)} expression={false} />;
  }
  return (
    <li className={`diff diff-${d.kind}`} data-testid="difference">
      <div>
        {kindText[d.kind] ?? d.kind} {d.nodeId && <b>{d.nodeId}</b>}
      </div>
      {body}
    </li>
  );
}

export function ComparisonView({ comparison, moved, onClose }: { comparison: Comparison; moved: string[]; onClose: () => void }) {
  const diffs = comparison.differences ?? [];
  return (
    <div className="comparison" data-testid="comparison">
      <div className="row">
        <b>
          v{comparison.from} → v{comparison.to}
        </b>
        <span className="spacer" />
        <button type="button" className="small" onClick={onClose}>
          Clear
        </button>
      </div>
      {comparison.identical && <div>The versions differ at most in layout.</div>}
      <ul>
        {diffs.map((d, i) => (
          <DifferenceView key={i} d={d} />
        ))}
        {moved.length > 0 && (
          <li className="diff diff-moved" data-testid="difference">
            moved: {moved.map((id, i) => <b key={id}>{i > 0 ? ', ' : ''}{id}</b>)}
          </li>
        )}
      </ul>
    </div>
  );
}
