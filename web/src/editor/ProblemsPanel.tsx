// Every validation error and warning of the graph; a click selects the node and brings it into view.
import type { ValidationResult } from '../api/client';

export function ProblemsPanel({ validation, onJump }: { validation: ValidationResult | null; onJump: (nodeId: string) => void }) {
  if (!validation) return <div className="muted">Validating…</div>;
  const errors = validation.errors ?? [];
  const warnings = validation.warnings ?? [];
  if (errors.length === 0 && warnings.length === 0) return <div data-testid="no-problems">No problems: the scenario is valid.</div>;
  const row = (p: (typeof errors)[number], i: number, severity: string) => (
    <li key={`${severity}${i}`} className={`problem problem-${severity}`} data-testid="problem" onClick={() => p.nodeId && onJump(p.nodeId)}>
      <span className="problem-node">{p.nodeId || 'scenario'}</span>
      {p.field && <span className="muted"> {p.field}</span>}
      {p.line ? <span className="muted"> {`${p.line}:${p.column}`}</span> : null}
      <div>{p.message}</div>
    </li>
  );
  return (
    <ul className="problems">
      {errors.map((p, i) => row(p, i, 'error'))}
      {warnings.map((p, i) => row(p, i, 'warning'))}
    </ul>
  );
}
