// The selected node's form, generated from its kind's parameter specs, plus the conditions of a
// choice's cases (on its edges, in order) and the variables in the node's scope.
import { useEffect, useState } from 'react';
import type { Aggregator, Kind, Problem, VariableType } from '../api/client';
import type { CanvasEdge, CanvasNode } from '../graph/convert';
import { expr, kindIdOf, type ScenarioGraph, type ScenarioNode } from '../graph/model';
import { branchIndex, getBranchParam, getParam, IN_BRANCH_PARAMETERS, isKafkaTopicParam, parameterIndex, setBranchParam, setParam } from '../graph/params';
import { ExpressionEditor, type Suggest } from './ExpressionEditor';
import { ParamField, problemsOf } from './ParamField';
import { IngestionInfo } from './IngestionInfo';
import { NodeTest } from './NodeTest';
import { useKafkaTopics } from './useKafkaTopics';

type Props = {
  /** The scenario's name (for a source's ingestion URL). */
  scenario: string;
  /** The first sample record of this node's source, if any (for the curl command and the node test). */
  sample?: unknown;
  /** The graph on the canvas (for testing the node alone). */
  graph: ScenarioGraph;
  node: CanvasNode;
  kind: Kind | undefined;
  /** Every edge of the canvas, in scenario order (a problem's "edges[i]" indexes into it). */
  edges: CanvasEdge[];
  problems: Problem[];
  variables: Record<string, VariableType> | undefined;
  aggregators: Aggregator[];
  suggest: Suggest;
  /** Changes the node; key groups consecutive changes of one field into one undo step. */
  onChange: (node: ScenarioNode, key: string) => void;
  onRename: (id: string) => boolean;
  onEdgeChange: (edgeId: string, edge: CanvasEdge, key: string) => void;
  onMoveEdge: (edgeId: string, direction: -1 | 1) => void;
};

export function IdField({ id, onRename }: { id: string; onRename: (id: string) => boolean }) {
  const [text, setText] = useState(id);
  const [error, setError] = useState('');
  useEffect(() => setText(id), [id]);
  const commit = () => {
    if (text === id) return;
    if (!text.trim()) {
      setError('a node needs a name');
      return;
    }
    if (!onRename(text)) {
      setError(`another node is named "${text}"`);
      return;
    }
    setError('');
  };
  return (
    <div className="param">
      <div className="param-label">Name (node id)</div>
      <input className="nokey" value={text} data-testid="node-id" onChange={(e) => setText(e.target.value)} onBlur={commit} onKeyDown={(e) => e.key === 'Enter' && commit()} />
      {error && <div className="field-error">{error}</div>}
    </div>
  );
}

export function DetailsPanel(props: Props) {
  const { node, kind, edges, problems, variables, aggregators, suggest, onChange } = props;
  const n = node.data.node;
  const specs = kind?.parameters ?? [];
  const nodeSpecs = specs.filter((s) => s.in !== IN_BRANCH_PARAMETERS);
  const kafkaTopics = useKafkaTopics(nodeSpecs.some((s) => isKafkaTopicParam(kindIdOf(n), s)));
  const branchSpecs = specs.filter((s) => s.in === IN_BRANCH_PARAMETERS);
  const incoming = edges.filter((e) => e.target === node.id);
  const cases = edges.map((e, index) => ({ e, index })).filter(({ e }) => e.source === node.id && e.sourceHandle === 'NextSwitch');
  const lateTargets = edges.filter((e) => e.source === node.id && e.sourceHandle === 'Late').map((e) => e.target);
  const used = new Set<string>();

  const fieldProblems = (p: Problem[]) => {
    for (const x of p) used.add(JSON.stringify(x));
    return p;
  };

  return (
    <div className="details nokey" data-testid="details">
      <h3>
        {kind?.label ?? kindIdOf(n)} <span className="muted">{kind?.id}</span>
      </h3>
      {kind && <p className="muted small">{kind.description}</p>}
      {!kind && <p className="field-error">The server has no node kind {kindIdOf(n)}.</p>}
      <IdField id={node.id} onRename={props.onRename} />
      {kindIdOf(n) === 'Source/http' && <IngestionInfo scenario={props.scenario} sourceId={node.id} sample={props.sample} />}
      <div className="param">
        <div className="param-label">Description</div>
        <input
          className="nokey"
          value={n.additionalFields?.description ?? ''}
          onChange={(e) => {
            const af = { ...(n.additionalFields ?? {}) };
            if (e.target.value) af.description = e.target.value;
            else delete af.description;
            const out: ScenarioNode = { ...n, additionalFields: af };
            if (Object.keys(af).length === 0) delete out.additionalFields;
            onChange(out, 'description');
          }}
        />
      </div>
      {nodeSpecs.map((spec) => {
        // Parameters stored in a list are named by their index in error fields: "parameters[2]".
        const i = parameterIndex(n, spec.name);
        const mine = problems.filter((p) => p.field === spec.name || p.field?.startsWith(spec.name + '[') || p.field?.startsWith(spec.name + '.') || (i >= 0 && p.field?.startsWith(`parameters[${i}]`)));
        return (
          <ParamField
            key={spec.name}
            spec={spec}
            value={getParam(n, spec)}
            onChange={(v) => onChange(setParam(n, spec, v), `param:${spec.name}`)}
            problems={fieldProblems(mine)}
            suggest={suggest}
            aggregators={aggregators}
            suggestions={isKafkaTopicParam(kindIdOf(n), spec) ? kafkaTopics : undefined}
          />
        );
      })}
      {branchSpecs.map((spec) => (
        <div className="param" key={spec.name}>
          <div className="param-label" title={spec.description}>
            {spec.label || spec.name} <span className="param-type">per branch</span>
          </div>
          {incoming.length === 0 && <div className="muted small">Connect branches to set it.</div>}
          {incoming.map((e) => {
            const b = branchIndex(n, e.source);
            const mine = b >= 0 ? problems.filter((p) => p.field?.startsWith(`branchParameters[${b}]`)) : [];
            return (
              <div key={e.id} className="branch">
                <div className="muted small">from {e.source}</div>
                <ExpressionEditor
                  value={getBranchParam(n, spec, e.source) ?? ''}
                  onChange={(t) => onChange(setBranchParam(n, spec, e.source, t === '' ? undefined : t), `branch:${e.source}`)}
                  suggest={suggest}
                  problems={fieldProblems(mine)}
                />
              </div>
            );
          })}
        </div>
      ))}
      {kind?.edges.outputs?.some((o) => o.edgeType === 'Late') && (
        <div className="param late-hint" data-testid="late-output">
          <div className="param-label">Late events</div>
          <div className="muted small">
            {lateTargets.length > 0
              ? `Sent on the late edge to ${lateTargets.join(', ')}, unchanged, with #late = {windowStart, windowEnd, watermark} of the first window each missed.`
              : 'Dropped and counted. Draw an edge from the "late" handle to send them on, with #late = {windowStart, windowEnd, watermark}.'}
          </div>
        </div>
      )}
      {kind?.edges.outputs?.some((o) => o.condition) && (
        <div className="param" data-testid="cases">
          <div className="param-label">Cases, tried in order</div>
          {cases.length === 0 && <div className="muted small">Draw edges from the "cases" handle to add cases.</div>}
          {cases.map(({ e, index }, k) => {
            const mine = problemsOf(problems, `edges[${index}]`);
            return (
              <div key={e.id} className="list-item">
                <div className="row">
                  <span>
                    case {k + 1} → {e.target}
                  </span>
                  <button type="button" className="small" disabled={k === 0} onClick={() => props.onMoveEdge(e.id, -1)} title="try earlier">
                    ↑
                  </button>
                  <button type="button" className="small" disabled={k === cases.length - 1} onClick={() => props.onMoveEdge(e.id, 1)} title="try later">
                    ↓
                  </button>
                </div>
                <ExpressionEditor
                  value={e.data?.edgeType?.condition?.expression ?? ''}
                  onChange={(t) => props.onEdgeChange(e.id, { ...e, data: { edgeType: { type: 'NextSwitch', condition: expr(t) } } }, `case:${e.id}`)}
                  suggest={suggest}
                  problems={fieldProblems(mine.filter((p) => p.line))}
                  placeholder="condition"
                />
                {mine
                  .filter((p) => !p.line)
                  .map((p, j) => (
                    <div key={j} className="field-error">
                      {p.message}
                    </div>
                  ))}
              </div>
            );
          })}
        </div>
      )}
      {problems.some((p) => !used.has(JSON.stringify(p))) && (
        <div className="param">
          <div className="param-label">Node problems</div>
          {problems
            .filter((p) => !used.has(JSON.stringify(p)))
            .map((p, i) => (
              <div key={i} className="field-error" data-testid="node-problem">
                {p.field ? `${p.field}: ` : ''}
                {p.message}
              </div>
            ))}
        </div>
      )}
      {n.type !== 'Source' && <NodeTest graph={props.graph} nodeId={node.id} sample={props.sample} />}
      <details className="scope">
        <summary>Variables in scope</summary>
        {!variables && <div className="muted small">Unknown: connect the node to a source.</div>}
        {variables &&
          Object.entries(variables)
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([name, t]) => (
              <div key={name} className="var">
                <code>#{name}</code> <span className="muted">{t.display}</span>
              </div>
            ))}
      </details>
    </div>
  );
}
