// The scenario editor: the canvas (React Flow), the palette, the node form, problems, history,
// test and deployment panels, and saving.
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import {
  Background,
  Controls,
  MiniMap,
  ReactFlow,
  ReactFlowProvider,
  applyEdgeChanges,
  applyNodeChanges,
  useReactFlow,
  type Connection,
  type EdgeChange,
  type NodeChange,
} from '@xyflow/react';
import { api, problemText, type Comparison, type Components, type Kind, type ProblemDetails, type ValidationResult, type Version } from '../api/client';
import { edgeId, edgeTypeFor, toCanvas, toScenario, type CanvasEdge, type CanvasGraph, type CanvasNode } from '../graph/convert';
import { autoLayout, NODE_WIDTH } from '../graph/layout';
import { contentKey, kindIdOf, normalizeGraph, type ScenarioGraph, type ScenarioNode } from '../graph/model';
import { freshId, newNode, renameBranch } from '../graph/params';
import { samplesBySource, sourceIds, withSampleSchemas } from '../graph/samples';
import { useSampleRecords } from './useSampleRecords';
import { useResizable } from './useResizable';
import { EditorContext, type DiffMark, type EditorContextValue } from './context';
import { DetailsPanel } from './DetailsPanel';
import { KIND_MIME, Palette } from './Palette';
import { ProblemsPanel } from './ProblemsPanel';
import { ScenarioNodeView } from './ScenarioNodeView';
import { ComparisonView, exportHref, VersionsPanel } from './VersionsPanel';
import { ConflictView } from './ConflictView';
import { edgeCountsOf, TestPanel, type TestRun } from './TestPanel';
import { CountsLegend } from './CountsLegend';
import { DeployPanel } from '../deploy/DeployPanel';
import { useDeployment } from '../deploy/useDeployment';
import { needsText, UserMenu, useAuth } from '../auth';

const nodeTypes = { scenario: ScenarioNodeView };

type Doc = { nodes: CanvasNode[]; edges: CanvasEdge[] };
type Tab = 'node' | 'problems' | 'history' | 'test' | 'deploy';

const edgeLabels: Record<string, string> = { FilterTrue: 'true', FilterFalse: 'false', SwitchDefault: 'default', Late: 'late' };

function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el) return false;
  return el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName) || !!el.closest?.('.cm-editor');
}

function unselected(d: Doc): Doc {
  return { nodes: d.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), edges: d.edges.map((e) => (e.selected ? { ...e, selected: false } : e)) };
}

type Props = { name: string; components: Components };

export function Editor(props: Props) {
  return (
    <ReactFlowProvider>
      <EditorInner {...props} />
    </ReactFlowProvider>
  );
}

function EditorInner({ name, components }: Props) {
  const flow = useReactFlow<CanvasNode, CanvasEdge>();
  // A viewer sees the graph read-only: no palette, no dragging, connecting or deleting, no save.
  const { can, me } = useAuth();
  const canEdit = can('editor');
  const kinds = useMemo(() => new Map((components.kinds ?? []).map((k) => [k.id, k])), [components]);

  const [nodes, setNodes] = useState<CanvasNode[]>([]);
  const [edges, setEdges] = useState<CanvasEdge[]>([]);
  const [rest, setRest] = useState<CanvasGraph['rest']>({});
  const [loadError, setLoadError] = useState('');
  const [loaded, setLoaded] = useState(false);
  const [baseVersion, setBaseVersion] = useState(0);
  const [archived, setArchived] = useState(false);
  const [savedJson, setSavedJson] = useState('');
  const [validation, setValidation] = useState<ValidationResult | null>(null);
  // The graph the validation is of: while the graph has changed since, a field's messages are
  // held back, so that none names text no longer in the field.
  const [validatedJson, setValidatedJson] = useState('');
  const [tab, setTab] = useState<Tab>('node');
  const [comparison, setComparison] = useState<Comparison | null>(null);
  const [moved, setMoved] = useState<string[]>([]);
  const [viewing, setViewing] = useState<number | null>(null);
  const [conflict, setConflict] = useState<ProblemDetails | null>(null);
  const [saveOpen, setSaveOpen] = useState(false);
  const [comment, setComment] = useState('');
  const [status, setStatus] = useState('');
  const deployment = useDeployment(name);
  const sideSize = useResizable();
  const liveCounts = deployment.liveCounts;

  const doc = useRef<Doc>({ nodes, edges });
  doc.current = { nodes, edges };
  const history = useRef<{ past: Doc[]; future: Doc[]; lastKey?: string }>({ past: [], future: [] });
  const clipboard = useRef<Doc | null>(null);
  const [, setHistoryTick] = useState(0);

  const scenarioGraph: ScenarioGraph = useMemo(() => toScenario(nodes, edges, rest), [nodes, edges, rest]);
  const scenarioJson = useMemo(() => JSON.stringify(scenarioGraph), [scenarioGraph]);
  const graphRef = useRef(scenarioGraph);
  graphRef.current = scenarioGraph;
  const dirty = loaded && scenarioJson !== savedJson;
  const [testRun, setTestRun] = useState<TestRun | null>(null);
  const testStale = useMemo(() => !!testRun && testRun.graphKey !== contentKey(scenarioGraph), [testRun, scenarioGraph]);

  const pushHistory = useCallback((key?: string) => {
    const h = history.current;
    if (key && h.lastKey === key) return;
    h.past.push(unselected(doc.current));
    if (h.past.length > 200) h.past.shift();
    h.future = [];
    h.lastKey = key;
    setHistoryTick((t) => t + 1);
  }, []);

  const change = useCallback(
    (next: Doc, key?: string) => {
      pushHistory(key);
      setNodes(next.nodes);
      setEdges(next.edges);
    },
    [pushHistory],
  );

  const undo = useCallback(() => {
    const h = history.current;
    const prev = h.past.pop();
    if (!prev) return;
    h.future.push(unselected(doc.current));
    h.lastKey = undefined;
    setNodes(prev.nodes);
    setEdges(prev.edges);
    setHistoryTick((t) => t + 1);
  }, []);

  const redo = useCallback(() => {
    const h = history.current;
    const next = h.future.pop();
    if (!next) return;
    h.past.push(unselected(doc.current));
    h.lastKey = undefined;
    setNodes(next.nodes);
    setEdges(next.edges);
    setHistoryTick((t) => t + 1);
  }, []);

  /** Shows a graph on the canvas; nodes without layoutData are laid out. */
  const show = useCallback((graph: ScenarioGraph, opts: { keepHistory?: boolean } = {}) => {
    const c = toCanvas(graph);
    let cn = c.nodes;
    if (c.unplaced.length > 0) cn = autoLayout(cn, c.edges, c.unplaced.length === cn.length ? undefined : new Set(c.unplaced));
    if (opts.keepHistory) pushHistory();
    setNodes(cn);
    setEdges(c.edges);
    setRest(c.rest);
    return toScenario(cn, c.edges, c.rest);
  }, [pushHistory]);

  // Load the latest version.
  useEffect(() => {
    let live = true;
    api.GET('/api/scenarios/{name}', { params: { path: { name } } }).then(({ data, error }) => {
      if (!live) return;
      if (error) {
        setLoadError(problemText(error));
        return;
      }
      const shown = show(normalizeGraph(data.latest.graph));
      setSavedJson(JSON.stringify(shown));
      setBaseVersion(data.scenario.latestVersion);
      setArchived(data.scenario.archived);
      setLoaded(true);
      // React Flow holds a fitView back until the nodes are measured; with no nodes it would
      // jump to the first node dropped.
      if (shown.nodes.length > 0) setTimeout(() => flow.fitView({ maxZoom: 1, padding: 0.2 }), 50);
    });
    return () => {
      live = false;
    };
  }, [name, show, flow]);

  // Validate as the graph changes, dropping answers to older graphs.
  const validationSeq = useRef(0);
  useEffect(() => {
    if (!loaded) return;
    const seq = ++validationSeq.current;
    const t = setTimeout(async () => {
      const { data } = await api.POST('/api/validation', { body: { graph: JSON.parse(scenarioJson) } });
      if (seq === validationSeq.current && data) {
        setValidation(data);
        setValidatedJson(scenarioJson);
      }
    }, 250);
    return () => clearTimeout(t);
  }, [scenarioJson, loaded]);

  const errorsByNode = useMemo(() => {
    const m = new Map<string, NonNullable<ValidationResult['errors']>>();
    for (const p of validation?.errors ?? []) {
      if (!p.nodeId) continue;
      const list = m.get(p.nodeId) ?? [];
      list.push(p);
      m.set(p.nodeId, list);
    }
    return m;
  }, [validation]);

  const diff = useMemo(() => {
    const m = new Map<string, DiffMark>();
    for (const d of comparison?.differences ?? []) {
      if (!d.nodeId) continue;
      if (d.kind === 'node-added') m.set(d.nodeId, 'added');
      else if (d.kind === 'node-changed' || d.kind === 'edges-reordered' || d.kind === 'edge-added' || d.kind === 'edge-removed') {
        if (!m.has(d.nodeId)) m.set(d.nodeId, 'changed');
      }
    }
    if (comparison) for (const id of moved) if (!m.has(id)) m.set(id, 'moved');
    return m;
  }, [comparison, moved]);

  // Sample records: the test panel's, and the types completion takes from them for sources without a schema.
  const [records, setRecords] = useSampleRecords(name);
  const samples = useMemo(() => samplesBySource(records, sourceIds(scenarioGraph)), [records, scenarioGraph]);
  const samplesRef = useRef(samples);
  samplesRef.current = samples;
  const inferredFor = useMemo(
    () => withSampleSchemas(scenarioGraph, kinds, samples).nodes.filter((n, i) => n !== scenarioGraph.nodes[i]).map((n) => n.id),
    [scenarioGraph, kinds, samples],
  );

  const suggest = useCallback(async (nodeId: string, text: string, caret: number) => {
    const graph = withSampleSchemas(graphRef.current, kinds, samplesRef.current);
    const { data } = await api.POST('/api/suggestions', { body: { graph, nodeId, expression: text, caret } });
    return data?.suggestions ?? [];
  }, [kinds]);

  const ctx: EditorContextValue = useMemo(
    () => ({
      kinds,
      aggregators: components.aggregators ?? [],
      errors: errorsByNode,
      testCounts: testRun?.counts,
      liveCounts,
      testLate: testRun?.late,
      liveLate: deployment.liveLate,
      testErrors: testRun?.errors,
      liveErrors: deployment.liveErrors,
      testStale,
      diff,
      suggest,
    }),
    [kinds, components, errorsByNode, testRun, liveCounts, deployment.liveLate, deployment.liveErrors, testStale, diff, suggest],
  );

  // Canvas events.
  const onNodesChange = useCallback(
    (changes: NodeChange<CanvasNode>[]) => {
      // Removal goes through onDelete, so that a node and its edges are one undo step.
      const kept = changes.filter((c) => c.type !== 'remove');
      if (kept.length) setNodes((ns) => applyNodeChanges(kept, ns));
    },
    [],
  );
  const onEdgesChange = useCallback((changes: EdgeChange<CanvasEdge>[]) => {
    const kept = changes.filter((c) => c.type !== 'remove');
    if (kept.length) setEdges((es) => applyEdgeChanges(kept, es));
  }, []);

  const deleteElements = useCallback(
    (nodeIds: Set<string>, edgeIds: Set<string>) => {
      const d = doc.current;
      change({
        nodes: d.nodes.filter((n) => !nodeIds.has(n.id)),
        edges: d.edges.filter((e) => !edgeIds.has(e.id) && !nodeIds.has(e.source) && !nodeIds.has(e.target)),
      });
    },
    [change],
  );

  const onDelete = useCallback(
    ({ nodes: ns, edges: es }: { nodes: CanvasNode[]; edges: CanvasEdge[] }) => deleteElements(new Set(ns.map((n) => n.id)), new Set(es.map((e) => e.id))),
    [deleteElements],
  );

  const onConnect = useCallback(
    (c: Connection) => {
      const d = doc.current;
      const taken = new Set(d.edges.map((e) => e.id));
      const handle = c.sourceHandle ?? 'out';
      const edge: CanvasEdge = {
        id: edgeId(c.source, c.target, handle, taken),
        source: c.source,
        target: c.target,
        sourceHandle: handle,
        targetHandle: 'in',
        data: { edgeType: edgeTypeFor(handle) },
      };
      change({ nodes: d.nodes, edges: [...d.edges, edge] });
    },
    [change],
  );

  const addNode = useCallback(
    (kind: Kind, position?: { x: number; y: number }) => {
      const d = doc.current;
      const id = freshId(kind.label, new Set(d.nodes.map((n) => n.id)));
      let pos = position;
      if (!pos) {
        const box = document.querySelector('.canvas')?.getBoundingClientRect();
        pos = flow.screenToFlowPosition({ x: (box?.left ?? 0) + (box?.width ?? 600) / 2, y: (box?.top ?? 0) + (box?.height ?? 400) / 2 });
      }
      const node: CanvasNode = {
        id,
        type: 'scenario',
        position: { x: Math.round(pos.x - NODE_WIDTH / 2), y: Math.round(pos.y - 20) },
        data: { node: newNode(kind, id) },
        selected: true,
      };
      change({ nodes: [...d.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), node], edges: d.edges });
      setTab('node');
    },
    [change, flow],
  );

  const onDrop = useCallback(
    (e: React.DragEvent) => {
      const id = e.dataTransfer.getData(KIND_MIME);
      const kind = kinds.get(id);
      if (!kind || !canEdit) return;
      e.preventDefault();
      addNode(kind, flow.screenToFlowPosition({ x: e.clientX, y: e.clientY }));
    },
    [kinds, addNode, flow, canEdit],
  );

  const copy = useCallback(() => {
    const d = doc.current;
    const ns = d.nodes.filter((n) => n.selected);
    if (ns.length === 0) return;
    const ids = new Set(ns.map((n) => n.id));
    clipboard.current = unselected({ nodes: ns, edges: d.edges.filter((e) => ids.has(e.source) && ids.has(e.target)) });
    setStatus(`copied ${ns.length} node${ns.length === 1 ? '' : 's'}`);
  }, []);

  const paste = useCallback(() => {
    const c = clipboard.current;
    if (!c) return;
    const d = doc.current;
    const taken = new Set(d.nodes.map((n) => n.id));
    const rename = new Map<string, string>();
    for (const n of c.nodes) {
      const id = freshId(n.id, taken);
      taken.add(id);
      rename.set(n.id, id);
    }
    const pasted: CanvasNode[] = c.nodes.map((n) => {
      const id = rename.get(n.id)!;
      let node: ScenarioNode = { ...n.data.node, id };
      for (const [from, to] of rename) node = renameBranch(node, from, to);
      return { ...n, id, selected: true, position: { x: n.position.x + 40, y: n.position.y + 40 }, data: { node } };
    });
    const edgeIds = new Set(d.edges.map((e) => e.id));
    const pastedEdges = c.edges.map((e) => {
      const source = rename.get(e.source)!;
      const target = rename.get(e.target)!;
      return { ...e, source, target, id: edgeId(source, target, e.sourceHandle ?? 'out', edgeIds) };
    });
    change({ nodes: [...unselected(d).nodes, ...pasted], edges: [...d.edges, ...pastedEdges] });
    clipboard.current = { nodes: pasted.map((n) => ({ ...n, selected: false })), edges: pastedEdges };
  }, [change]);

  const layout = useCallback(() => {
    const d = doc.current;
    change({ nodes: autoLayout(d.nodes, d.edges), edges: d.edges });
    setTimeout(() => flow.fitView({ maxZoom: 1, padding: 0.2 }), 50);
  }, [change, flow]);

  // Keyboard: undo, redo, copy, paste (deleting is React Flow's Delete and Backspace).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isTyping(e.target)) return;
      const mod = e.ctrlKey || e.metaKey;
      if (!mod) return;
      const k = e.key.toLowerCase();
      if (k === 'c') copy();
      if (!canEdit) return;
      if (k === 'z' && !e.shiftKey) undo();
      else if ((k === 'z' && e.shiftKey) || k === 'y') redo();
      else if (k === 'c') copy();
      else if (k === 'v') paste();
      else if (k === 's') setSaveOpen(true);
      else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [undo, redo, copy, paste, canEdit]);

  // Warn before leaving with unsaved work.
  useEffect(() => {
    if (!dirty) return;
    const onBeforeUnload = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', onBeforeUnload);
    return () => window.removeEventListener('beforeunload', onBeforeUnload);
  }, [dirty]);

  const selected = nodes.filter((n) => n.selected);
  const selectedNode = selected.length === 1 ? selected[0] : undefined;

  const jumpTo = useCallback(
    (id: string) => {
      const n = doc.current.nodes.find((x) => x.id === id);
      if (!n) return;
      setNodes((ns) => ns.map((x) => ({ ...x, selected: x.id === id })));
      setEdges((es) => es.map((x) => (x.selected ? { ...x, selected: false } : x)));
      flow.setCenter(n.position.x + (n.measured?.width ?? NODE_WIDTH) / 2, n.position.y + 30, { zoom: Math.max(flow.getZoom(), 1), duration: 300 });
      setTab('node');
    },
    [flow],
  );

  /** Writes the schema of the samples into each source that has samples (one undo step). */
  const generateSchemas = useCallback(() => {
    const d = doc.current;
    const g = withSampleSchemas(graphRef.current, kinds, samplesRef.current, true);
    const byId = new Map(g.nodes.map((n) => [n.id, n]));
    change({ nodes: d.nodes.map((n) => (byId.get(n.id) && byId.get(n.id) !== n.data.node ? { ...n, data: { node: byId.get(n.id)! } } : n)), edges: d.edges });
    setStatus('wrote the schema of the samples into the sources');
  }, [change, kinds]);

  const updateNode = useCallback(
    (id: string, node: ScenarioNode, key: string) => {
      const d = doc.current;
      change({ nodes: d.nodes.map((n) => (n.id === id ? { ...n, data: { node } } : n)), edges: d.edges }, `${id}:${key}`);
    },
    [change],
  );

  const renameNode = useCallback(
    (from: string, to: string): boolean => {
      const d = doc.current;
      if (!to || d.nodes.some((n) => n.id === to)) return false;
      const taken = new Set<string>();
      change({
        nodes: d.nodes.map((n) => {
          const node = renameBranch(n.data.node, from, to);
          if (n.id === from) return { ...n, id: to, data: { node: { ...node, id: to } } };
          return node === n.data.node ? n : { ...n, data: { node } };
        }),
        edges: d.edges.map((e) => {
          const source = e.source === from ? to : e.source;
          const target = e.target === from ? to : e.target;
          return { ...e, source, target, id: edgeId(source, target, e.sourceHandle ?? 'out', taken) };
        }),
      });
      return true;
    },
    [change],
  );

  const updateEdge = useCallback(
    (id: string, edge: CanvasEdge, key: string) => {
      const d = doc.current;
      change({ nodes: d.nodes, edges: d.edges.map((e) => (e.id === id ? edge : e)) }, `edge:${key}`);
    },
    [change],
  );

  /** Moves a choice's case before or after its neighbouring case, changing the order it is tried in. */
  const moveCase = useCallback(
    (id: string, direction: -1 | 1) => {
      const d = doc.current;
      const e = d.edges.find((x) => x.id === id);
      if (!e) return;
      const siblings = d.edges.map((x, i) => ({ x, i })).filter(({ x }) => x.source === e.source && x.sourceHandle === 'NextSwitch');
      const k = siblings.findIndex(({ x }) => x.id === id);
      const other = siblings[k + direction];
      if (!other) return;
      const next = [...d.edges];
      next[siblings[k].i] = other.x;
      next[other.i] = e;
      change({ nodes: d.nodes, edges: next });
    },
    [change],
  );

  const save = useCallback(
    async (base: number) => {
      const graph = graphRef.current;
      setStatus('saving…');
      const { data, error } = await api.POST('/api/scenarios/{name}/versions', { params: { path: { name } }, body: { baseVersion: base, graph, comment } });
      if (error) {
        if (error.code === 'version-conflict') {
          setConflict(error);
          setSaveOpen(false);
          setStatus('');
        } else setStatus(`not saved: ${problemText(error)}`);
        return;
      }
      setBaseVersion(data.version);
      setSavedJson(JSON.stringify(graph));
      setConflict(null);
      setSaveOpen(false);
      setComment('');
      setViewing(null);
      setStatus(`saved version ${data.version}`);
    },
    [name, comment],
  );

  const openVersion = useCallback(
    (v: Version) => {
      show(normalizeGraph(v.graph), { keepHistory: true });
      setViewing(v.version);
      setComparison(null);
      setStatus(`showing version ${v.version}; saving makes it a new version on top of v${baseVersion}`);
      setTimeout(() => flow.fitView({ maxZoom: 1, padding: 0.2 }), 50);
    },
    [show, baseVersion, flow],
  );

  const liveEdgeCounts = useMemo(() => (liveCounts ? edgeCountsOf(liveCounts, scenarioGraph) : undefined), [liveCounts, scenarioGraph]);
  const displayEdges = useMemo(() => {
    const caseNo = new Map<string, number>();
    return edges.map((e) => {
      let label: string | undefined = edgeLabels[e.sourceHandle ?? ''];
      if (e.sourceHandle === 'NextSwitch') {
        const k = (caseNo.get(e.source) ?? 0) + 1;
        caseNo.set(e.source, k);
        label = `case ${k}`;
      }
      // Edges show the live counts while deployed, else the test's (marked stale after an edit).
      const key = `${e.source}\u0000${e.target}`;
      const counted = liveEdgeCounts ? liveEdgeCounts[key] : testRun?.edgeCounts?.[key];
      const countClass = counted === undefined ? '' : liveEdgeCounts ? ' edge-count-live' : testStale ? ' edge-count-test edge-count-stale' : ' edge-count-test';
      if (counted !== undefined) label = `${label ? label + ' · ' : ''}${counted}`;
      return label ? { ...e, label, className: `edge-${e.sourceHandle}${countClass}` } : e;
    });
  }, [edges, testRun, liveEdgeCounts, testStale]);

  if (loadError) {
    return (
      <div className="page">
        <p className="field-error">{loadError}</p>
        <a href="#/">Back to the scenarios</a>
      </div>
    );
  }

  const errorCount = validation?.errors?.length ?? 0;

  return (
    <EditorContext.Provider value={ctx}>
      <div className="editor">
        <header className="toolbar">
          <a href="#/" className="back" title="All scenarios">
            ←
          </a>
          <h2 data-testid="scenario-name">{name}</h2>
          <span className="muted" data-testid="version">
            v{baseVersion}
            {viewing !== null && viewing !== baseVersion ? ` (showing v${viewing})` : ''}
          </span>
          {archived && <span className="badge">archived</span>}
          {deployment.status && deployment.status.status !== 'NOT_DEPLOYED' && (
            <span className={`badge status-${deployment.status.status}`} title={deployment.status.reason}>
              {deployment.status.status.toLowerCase()}
              {deployment.status.deployment ? ` v${deployment.status.deployment.version}` : ''}
            </span>
          )}
          {dirty && (
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
          <button type="button" onClick={undo} disabled={history.current.past.length === 0} title="Undo (Ctrl+Z)" data-testid="undo">
            Undo
          </button>
          <button type="button" onClick={redo} disabled={history.current.future.length === 0} title="Redo (Ctrl+Shift+Z)" data-testid="redo">
            Redo
          </button>
            </>
          )}
          <button type="button" onClick={copy} disabled={selected.length === 0} title="Copy (Ctrl+C)">
            Copy
          </button>
          {canEdit && (
            <>
          <button type="button" onClick={paste} title="Paste (Ctrl+V)" data-testid="paste">
            Paste
          </button>
          <button
            type="button"
            onClick={() => deleteElements(new Set(selected.map((n) => n.id)), new Set(edges.filter((e) => e.selected).map((e) => e.id)))}
            disabled={selected.length === 0 && !edges.some((e) => e.selected)}
            title="Delete (Delete key)"
          >
            Delete
          </button>
          <button type="button" onClick={layout} title="Lay the graph out top to bottom" data-testid="layout">
            Auto-layout
          </button>
            </>
          )}
          <a className="button" href={exportHref(name)} download={`${name}.json`} title="Download the latest saved version">
            Export
          </a>
          {canEdit && (
            <button type="button" className="primary" onClick={() => setSaveOpen((o) => !o)} disabled={archived} data-testid="save">
              Save…
            </button>
          )}
          <UserMenu />
        </header>
        {saveOpen && canEdit && (
          <form
            className="savebar"
            onSubmit={(e) => {
              e.preventDefault();
              save(baseVersion);
            }}
          >
            <input autoFocus value={comment} placeholder="What changed? (comment)" onChange={(e) => setComment(e.target.value)} data-testid="save-comment" />
            <button type="submit" className="primary" data-testid="save-confirm">
              Save version {baseVersion + 1}
            </button>
            <button type="button" onClick={() => setSaveOpen(false)}>
              Cancel
            </button>
          </form>
        )}
        {conflict?.conflict && (
          <ConflictView
            name={name}
            conflict={conflict.conflict}
            mine={scenarioGraph}
            onMerge={(merged) => {
              const latest = conflict.conflict!.latest;
              show(merged, { keepHistory: true });
              const c = toCanvas(normalizeGraph(latest.graph));
              setSavedJson(JSON.stringify(toScenario(c.nodes, c.edges, c.rest)));
              setBaseVersion(latest.version);
              setViewing(null);
              setConflict(null);
              setStatus(`merged with version ${latest.version}: check it and save; Undo brings back your graph as it was`);
            }}
            onSaveMine={() => save(conflict.conflict!.latest.version)}
            onOpenLatest={() => {
              const shown = show(normalizeGraph(conflict.conflict!.latest.graph), { keepHistory: true });
              setSavedJson(JSON.stringify(shown));
              setBaseVersion(conflict.conflict!.latest.version);
              setViewing(null);
              setConflict(null);
              setStatus('opened the latest version; Undo brings your changes back');
            }}
            onClose={() => setConflict(null)}
          />
        )}
        <div className="workspace">
          {canEdit && <Palette components={components} onAdd={(k) => addNode(k)} />}
          <div className="canvas" data-testid="canvas" onDragOver={(e) => {
            e.preventDefault();
            e.dataTransfer.dropEffect = 'move';
          }} onDrop={onDrop}>
            <ReactFlow<CanvasNode, CanvasEdge>
              nodes={nodes}
              edges={displayEdges}
              nodeTypes={nodeTypes}
              onNodesChange={onNodesChange}
              onEdgesChange={onEdgesChange}
              onConnect={onConnect}
              onDelete={onDelete}
              nodesDraggable={canEdit}
              nodesConnectable={canEdit}
              edgesReconnectable={canEdit}
              onNodeDragStart={() => pushHistory()}
              onSelectionDragStart={() => pushHistory()}
              onNodeClick={() => setTab('node')}
              isValidConnection={(c) => c.source !== c.target}
              deleteKeyCode={canEdit ? ['Delete', 'Backspace'] : null}
              minZoom={0.2}
              maxZoom={2}
              proOptions={{ hideAttribution: true }}
            >
              <Background gap={20} />
              <CountsLegend test={!!testRun && !liveCounts} live={!!liveCounts} stale={testStale} />
              <MiniMap pannable zoomable nodeStrokeWidth={3} />
              <Controls />
            </ReactFlow>
          </div>
          <div {...sideSize.separator} />
          <aside className="side" style={{ width: sideSize.width }} data-testid="side-panel">
            <nav className="tabs">
              {(
                [
                  ['node', 'Node'],
                  ['problems', `Problems${errorCount ? ` (${errorCount})` : ''}`],
                  ['history', 'History'],
                  ['test', 'Test'],
                  ['deploy', 'Deploy'],
                ] as [Tab, string][]
              ).filter(([t]) => t !== 'test' || canEdit).map(([t, label]) => (
                <button key={t} type="button" className={tab === t ? 'active' : ''} onClick={() => setTab(t)} data-testid={`tab-${t}`}>
                  {label}
                </button>
              ))}
            </nav>
            <div className="tab-body">
              {tab === 'node' &&
                (selectedNode ? (
                  <fieldset className="plain" disabled={!canEdit} data-testid={canEdit ? undefined : 'details-read-only'}>
                  <DetailsPanel
                    key={selectedNode.id}
                    scenario={name}
                    sample={samples.get(selectedNode.id)?.[0]}
                    node={selectedNode}
                    kind={kinds.get(kindIdOf(selectedNode.data.node))}
                    edges={edges}
                    problems={validatedJson === scenarioJson ? (errorsByNode.get(selectedNode.id) ?? []) : []}
                    variables={validation?.variables?.[selectedNode.id]}
                    aggregators={components.aggregators ?? []}
                    suggest={(text, caret) => suggest(selectedNode.id, text, caret)}
                    onChange={(node, key) => canEdit && updateNode(selectedNode.id, node, key)}
                    onRename={(to) => canEdit && renameNode(selectedNode.id, to)}
                    onEdgeChange={(...a) => canEdit && updateEdge(...a)}
                    onMoveEdge={(...a) => canEdit && moveCase(...a)}
                  />
                  </fieldset>
                ) : (
                  <div className="muted">
                    {selected.length > 1 ? `${selected.length} nodes selected.` : 'Select a node to edit it, or drag one from the palette onto the canvas.'}
                  </div>
                ))}
              {tab === 'problems' && <ProblemsPanel validation={validation} onJump={jumpTo} />}
              {tab === 'history' && (
                <>
                  {comparison && <ComparisonView comparison={comparison} moved={moved} onClose={() => setComparison(null)} />}
                  <VersionsPanel
                    name={name}
                    latestVersion={baseVersion}
                    onOpen={openVersion}
                    onCompare={(c, to, mv) => {
                      openVersion(to);
                      setComparison(c);
                      setMoved(mv);
                    }}
                  />
                </>
              )}
              {tab === 'test' && canEdit && <TestPanel graph={scenarioGraph} records={records} onRecords={setRecords} inferredFor={inferredFor} onGenerateSchema={generateSchemas} selectedId={selectedNode?.id} run={testRun} onRun={setTestRun} />}
              {tab === 'deploy' && (
                <DeployPanel
                  name={name}
                  version={baseVersion}
                  dirty={dirty}
                  collectSinks={nodes.filter((n) => kindIdOf(n.data.node) === 'Sink/collect').map((n) => n.id)}
                  deployment={deployment}
                />
              )}
            </div>
          </aside>
        </div>
        <footer className="statusbar">
          <span data-testid="status">{status}</span>
          <span className="spacer" />
          <button type="button" className={`linklike ${errorCount ? 'has-errors' : ''}`} onClick={() => setTab('problems')} data-testid="problem-count">
            {validation ? (errorCount ? `${errorCount} error${errorCount === 1 ? '' : 's'}` : 'valid') : '…'}
          </button>
        </footer>
      </div>
    </EditorContext.Provider>
  );
}
