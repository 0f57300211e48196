// The editor's toolbar: the scenario's name, version and state, and the edit, layout, export
// and save commands (the edit commands only for editors).
import { needsText, UserMenu, useAuth } from '../auth';
import type { ScenarioDeployment } from '../deploy/useDeployment';
import { exportHref } from './VersionsPanel';

type Props = {
  name: string;
  baseVersion: number;
  viewing: number | null;
  /** The running version, when the graph shown is another: its live counts are not on it. */
  liveElsewhere?: number;
  archived: boolean;
  dirty: boolean;
  deployment: ScenarioDeployment | null;
  canUndo: boolean;
  canRedo: boolean;
  hasSelection: boolean;
  hasNodeSelection: boolean;
  onUndo: () => void;
  onRedo: () => void;
  onCopy: () => void;
  onPaste: () => void;
  onDelete: () => void;
  onLayout: () => void;
  onToggleSave: () => void;
};

export function EditorToolbar(p: Props) {
  const { can, me } = useAuth();
  const canEdit = can('editor');
  const d = p.deployment;
  return (
    <header className="toolbar">
      <a href="#/" className="back" title="All scenarios">
        ←
      </a>
      <h2 data-testid="scenario-name">{p.name}</h2>
      <span className="muted" data-testid="version">
        v{p.baseVersion}
        {p.viewing !== null && p.viewing !== p.baseVersion ? ` (showing v${p.viewing})` : ''}
      </span>
      {p.archived && <span className="badge">archived</span>}
      {d && d.status !== 'NOT_DEPLOYED' && (
        <span className={`badge status-${d.status}`} title={d.reason}>
          {d.status.toLowerCase()}
          {d.deployment ? ` v${d.deployment.version}` : ''}
        </span>
      )}
      {p.liveElsewhere !== undefined && (
        <span className="muted small" data-testid="live-elsewhere" title="Live counts are of the version that runs: open it (History) to see them on its graph.">
          live counts are of v{p.liveElsewhere}
        </span>
      )}
      {p.dirty && (
        <span className="badge badge-dirty" data-testid="dirty">
          unsaved
        </span>
      )}
      {!canEdit && (
        <span className="badge" title={needsText('Editing', 'editor', me.role)} data-testid="read-only">
          read-only
        </span>
      )}
      <span className="spacer" />
      {canEdit && (
        <>
          <button type="button" onClick={p.onUndo} disabled={!p.canUndo} title="Undo (Ctrl+Z)" data-testid="undo">
            Undo
          </button>
          <button type="button" onClick={p.onRedo} disabled={!p.canRedo} title="Redo (Ctrl+Shift+Z)" data-testid="redo">
            Redo
          </button>
        </>
      )}
      <button type="button" onClick={p.onCopy} disabled={!p.hasNodeSelection} title="Copy (Ctrl+C)">
        Copy
      </button>
      {canEdit && (
        <>
          <button type="button" onClick={p.onPaste} title="Paste (Ctrl+V)" data-testid="paste">
            Paste
          </button>
          <button type="button" onClick={p.onDelete} disabled={!p.hasSelection} title="Delete (Delete key)">
            Delete
          </button>
          <button type="button" onClick={p.onLayout} title="Lay the graph out top to bottom" data-testid="layout">
            Auto-layout
          </button>
        </>
      )}
      <a className="button" href={exportHref(p.name)} download={`${p.name}.json`} title="Download the latest saved version">
        Export
      </a>
      {canEdit && (
        <button type="button" className="primary" onClick={p.onToggleSave} disabled={p.archived} data-testid="save">
          Save…
        </button>
      )}
      <UserMenu />
    </header>
  );
}
