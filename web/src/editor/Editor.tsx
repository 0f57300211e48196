// The scenario editor: the canvas (React Flow), the palette, the node form, problems, history,
// test and deployment panels, and saving. The document (canvas, undo history, clipboard) is one
// reducer (docReducer), the state around it another (session); this component wires them to the
// server and to the parts of the screen.
import { useCallback, useEffect, useMemo, useReducer, useRef, useState } from 'react';
import { Background, Controls, MiniMap, ReactFlow, ReactFlowProvider, useReactFlow, type Connection, type EdgeChange, type NodeChange } from '@xyflow/react';
import { api, problemText, type Components, type Kind, type Version } from '../api/client';
import { toCanvas, toScenario, type CanvasEdge, type CanvasGraph, type CanvasNode } from '../graph/convert';
import { autoLayout, NODE_WIDTH } from '../graph/layout';
import { contentKey, kindIdOf, normalizeGraph, type ScenarioGraph } from '../graph/model';
import { freshId, newNode } from '../graph/params';
import { samplesBySource, sourceIds, withSampleSchemas } from '../graph/samples';
import { useAuth } from '../auth';
import { setLeaveGuard } from '../leaveGuard';
import { DeployPanel } from '../deploy/DeployPanel';
import { useDeployment } from '../deploy/useDeployment';
import { labelledEdges } from './canvasEdges';
import { ConflictView } from './ConflictView';
import { EditorContext, type DiffMark, type EditorContextValue } from './context';
import { CountsLegend } from './CountsLegend';
import { DetailsPanel } from './DetailsPanel';
import { docReducer, emptyDoc, type Doc } from './docReducer';
import { EditorToolbar } from './EditorToolbar';
import { KIND_MIME, Palette } from './Palette';
import { ProblemsPanel } from './ProblemsPanel';
import { SaveBar } from './SaveBar';
import { ScenarioNodeView } from './ScenarioNodeView';
import { initialSession, sessionReducer, type Tab } from './session';
import { edgeCountsOf, TestPanel, type TestRun } from './TestPanel';
import { useResizable } from './useResizable';
import { useSampleRecords } from './useSampleRecords';
import { useValidation } from './useValidation';
import { ComparisonView, VersionsPanel } from './VersionsPanel';

const nodeTypes = { scenario: ScenarioNodeView };

function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el) return false;
  return el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName) || !!el.closest?.('.cm-editor');
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
  const { can } = useAuth();
  const canEdit = can('editor');
  const kinds = useMemo(() => new Map((components.kinds ?? []).map((k) => [k.id, k])), [components]);

  const [doc, dispatch] = useReducer(docReducer, emptyDoc);
  const [session, act] = useReducer(sessionReducer, initialSession);
  const [rest, setRest] = useState<CanvasGraph['rest']>({});
  const [testRun, setTestRun] = useState<TestRun | null>(null);
  const deployment = useDeployment(name);
  const sideSize = useResizable();
  // The running deployment's counts are of its version: on another version's graph a node of
  // the same id may be another node (a new user read v1's HTTP source counts on v2's Kafka
  // source), so they show only on the running version's graph.
  const runningVersion = deployment.live?.running ? deployment.live.version : undefined;
  const liveElsewhere =
    deployment.liveCounts !== undefined && runningVersion !== undefined && runningVersion !== (session.viewing ?? session.baseVersion) ? runningVersion : undefined;
  const liveCounts = liveElsewhere === undefined ? deployment.liveCounts : undefined;
  const liveLate = liveElsewhere === undefined ? deployment.liveLate : undefined;
  const liveErrors = liveElsewhere === undefined ? deployment.liveErrors : undefined;
  const { nodes, edges } = doc;
  const docRef = useRef(doc);
  docRef.current = doc;

  const scenarioGraph: ScenarioGraph = useMemo(() => toScenario(nodes, edges, rest), [nodes, edges, rest]);
  const scenarioJson = useMemo(() => JSON.stringify(scenarioGraph), [scenarioGraph]);
  const graphRef = useRef(scenarioGraph);
  graphRef.current = scenarioGraph;
  const dirty = session.loaded && scenarioJson !== session.savedJson;
  const testStale = useMemo(() => !!testRun && testRun.graphKey !== contentKey(scenarioGraph), [testRun, scenarioGraph]);
  const { validation, errorsByNode, current: validationCurrent } = useValidation(scenarioJson, session.loaded);
  const setTab = useCallback((tab: Tab) => act({ type: 'tab', tab }), []);
  const setStatus = useCallback((status: string) => act({ type: 'status', status }), []);
  const fitView = useCallback(() => setTimeout(() => flow.fitView({ maxZoom: 1, padding: 0.2 }), 50), [flow]);

  /** Shows a graph on the canvas; nodes without layoutData are laid out. Returns it as shown. */
  const show = useCallback((graph: ScenarioGraph, opts: { keepHistory?: boolean } = {}) => {
    const c = toCanvas(graph);
    let cn = c.nodes;
    if (c.unplaced.length > 0) cn = autoLayout(cn, c.edges, c.unplaced.length === cn.length ? undefined : new Set(c.unplaced));
    dispatch({ type: 'load', doc: { nodes: cn, edges: c.edges }, keepHistory: opts.keepHistory });
    setRest(c.rest);
    return toScenario(cn, c.edges, c.rest);
  }, []);

  // Load the latest version.
  useEffect(() => {
    let live = true;
    api.GET('/api/scenarios/{name}', { params: { path: { name } } }).then(({ data, error }) => {
      if (!live) return;
      if (error) return act({ type: 'load-failed', error: problemText(error) });
      const shown = show(normalizeGraph(data.latest.graph));
      act({ type: 'loaded', version: data.scenario.latestVersion, archived: data.scenario.archived, savedJson: JSON.stringify(shown) });
      // React Flow holds a fitView back until the nodes are measured; with no nodes it would
      // jump to the first node dropped.
      if (shown.nodes.length > 0) fitView();
    });
    return () => {
      live = false;
    };
  }, [name, show, fitView]);

  const diff = useMemo(() => {
    const m = new Map<string, DiffMark>();
    const c = session.comparison;
    for (const d of c?.comparison.differences ?? []) {
      if (!d.nodeId) continue;
      if (d.kind === 'node-added') m.set(d.nodeId, 'added');
      else if (d.kind === 'node-changed' || d.kind === 'edges-reordered' || d.kind === 'edge-added' || d.kind === 'edge-removed') {
        if (!m.has(d.nodeId)) m.set(d.nodeId, 'changed');
      }
    }
    for (const id of c?.moved ?? []) if (!m.has(id)) m.set(id, 'moved');
    return m;
  }, [session.comparison]);

  // Sample records: the test panel's, and the types completion takes from them for sources without a schema.
  const [records, setRecords, recordsNotKept] = useSampleRecords(name);
  // Parsed again only when the records or the sources change, not on every edit.
  const sourceKey = sourceIds(scenarioGraph).join('\u0000');
  const samples = useMemo(() => samplesBySource(records, sourceKey ? sourceKey.split('\u0000') : []), [records, sourceKey]);
  const samplesRef = useRef(samples);
  samplesRef.current = samples;
  const inferredFor = useMemo(
    () => withSampleSchemas(scenarioGraph, kinds, samples).nodes.filter((n, i) => n !== scenarioGraph.nodes[i]).map((n) => n.id),
    [scenarioGraph, kinds, samples],
  );

  /** The first sample record of the node's source (the node's own for a source, else that of the source upstream). */
  const firstSample = (id: string): unknown => {
    const own = samples.get(id)?.[0];
    if (own !== undefined) return own;
    const seen = new Set<string>();
    const up = (x: string): unknown => {
      if (seen.has(x)) return undefined;
      seen.add(x);
      if (samples.has(x)) return samples.get(x)?.[0];
      for (const e of scenarioGraph.edges) if (e.to === x) {
        const v = up(e.from);
        if (v !== undefined) return v;
      }
      return undefined;
    };
    return up(id);
  };

  const suggest = useCallback(
    async (nodeId: string, text: string, caret: number) => {
      const graph = withSampleSchemas(graphRef.current, kinds, samplesRef.current);
      const { data } = await api.POST('/api/suggestions', { body: { graph, nodeId, expression: text, caret } });
      return data?.suggestions ?? [];
    },
    [kinds],
  );

  const ctx: EditorContextValue = useMemo(
    () => ({
      kinds,
      aggregators: components.aggregators ?? [],
      errors: errorsByNode,
      testCounts: testRun?.counts,
      liveCounts,
      testLate: testRun?.late,
      liveLate,
      testErrors: testRun?.errors,
      liveErrors,
      testStale,
      diff,
      suggest,
    }),
    [kinds, components, errorsByNode, testRun, liveCounts, liveLate, liveErrors, testStale, diff, suggest],
  );

  // Canvas events.
  const onNodesChange = useCallback((changes: NodeChange<CanvasNode>[]) => dispatch({ type: 'nodes-changed', changes }), []);
  const onEdgesChange = useCallback((changes: EdgeChange<CanvasEdge>[]) => dispatch({ type: 'edges-changed', changes }), []);
  const onDelete = useCallback(
    ({ nodes: ns, edges: es }: Doc) => dispatch({ type: 'delete', nodeIds: ns.map((n) => n.id), edgeIds: es.map((e) => e.id) }),
    [],
  );
  const onConnect = useCallback((c: Connection) => dispatch({ type: 'connect', source: c.source, target: c.target, handle: c.sourceHandle ?? 'out' }), []);

  const addNode = useCallback(
    (kind: Kind, position?: { x: number; y: number }) => {
      const id = freshId(kind.label, new Set(docRef.current.nodes.map((n) => n.id)));
      let pos = position;
      if (!pos) {
        const box = document.querySelector('.canvas')?.getBoundingClientRect();
        pos = flow.screenToFlowPosition({ x: (box?.left ?? 0) + (box?.width ?? 600) / 2, y: (box?.top ?? 0) + (box?.height ?? 400) / 2 });
      }
      dispatch({ type: 'add', node: { id, type: 'scenario', position: { x: Math.round(pos.x - NODE_WIDTH / 2), y: Math.round(pos.y - 20) }, data: { node: newNode(kind, id) } } });
      setTab('node');
    },
    [flow, setTab],
  );

  const onDrop = useCallback(
    (e: React.DragEvent) => {
      const kind = kinds.get(e.dataTransfer.getData(KIND_MIME));
      if (!kind || !canEdit) return;
      e.preventDefault();
      addNode(kind, flow.screenToFlowPosition({ x: e.clientX, y: e.clientY }));
    },
    [kinds, addNode, flow, canEdit],
  );

  const copy = useCallback(() => {
    const n = docRef.current.nodes.filter((x) => x.selected).length;
    if (n === 0) return;
    dispatch({ type: 'copy' });
    setStatus(`copied ${n} node${n === 1 ? '' : 's'}`);
  }, [setStatus]);

  const layout = useCallback(() => {
    const d = docRef.current;
    dispatch({ type: 'edit', doc: { nodes: autoLayout(d.nodes, d.edges), edges: d.edges } });
    fitView();
  }, [fitView]);

  // Keyboard: undo, redo, copy, paste, save (deleting is React Flow's Delete and Backspace).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isTyping(e.target)) return;
      if (!(e.ctrlKey || e.metaKey)) return;
      const k = e.key.toLowerCase();
      if (k === 'c') copy();
      else if (!canEdit) return;
      else if (k === 'z' && !e.shiftKey) dispatch({ type: 'undo' });
      else if ((k === 'z' && e.shiftKey) || k === 'y') dispatch({ type: 'redo' });
      else if (k === 'v') dispatch({ type: 'paste' });
      else if (k === 's') act({ type: 'save-bar', open: true });
      else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [copy, canEdit]);

  // Warn before leaving with unsaved work: the browser asks when the tab closes or reloads,
  // the designer when another of its pages is opened (a link, Back).
  useEffect(() => {
    if (!dirty) return;
    const onBeforeUnload = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', onBeforeUnload);
    setLeaveGuard(() => `"${name}" has unsaved changes. Leave it and lose them?`);
    return () => {
      window.removeEventListener('beforeunload', onBeforeUnload);
      setLeaveGuard(null);
    };
  }, [dirty, name]);

  const selected = nodes.filter((n) => n.selected);
  const selectedNode = selected.length === 1 ? selected[0] : undefined;

  const jumpTo = useCallback(
    (id: string) => {
      const n = docRef.current.nodes.find((x) => x.id === id);
      if (!n) return;
      dispatch({ type: 'select', id });
      flow.setCenter(n.position.x + (n.measured?.width ?? NODE_WIDTH) / 2, n.position.y + 30, { zoom: Math.max(flow.getZoom(), 1), duration: 300 });
      setTab('node');
    },
    [flow, setTab],
  );

  /** Writes the schema of the samples into each source that has samples (one undo step). */
  const generateSchemas = useCallback(() => {
    const d = docRef.current;
    const byId = new Map(withSampleSchemas(graphRef.current, kinds, samplesRef.current, true).nodes.map((n) => [n.id, n]));
    dispatch({ type: 'edit', doc: { nodes: d.nodes.map((n) => (byId.get(n.id) && byId.get(n.id) !== n.data.node ? { ...n, data: { node: byId.get(n.id)! } } : n)), edges: d.edges } });
    setStatus('wrote the schema of the samples into the sources');
  }, [kinds, setStatus]);

  const save = useCallback(
    async (base: number) => {
      const graph = graphRef.current;
      setStatus('saving…');
      const { data, error } = await api.POST('/api/scenarios/{name}/versions', { params: { path: { name } }, body: { baseVersion: base, graph, comment: session.comment } });
      if (error) {
        if (error.code === 'version-conflict' && error.conflict) act({ type: 'conflict', conflict: error.conflict });
        else setStatus(`not saved: ${problemText(error)}`);
        return;
      }
      act({ type: 'saved', version: data.version, savedJson: JSON.stringify(graph) });
    },
    [name, session.comment, setStatus],
  );

  const openVersion = useCallback(
    (v: Version) => {
      show(normalizeGraph(v.graph), { keepHistory: true });
      act({ type: 'opened', version: v.version });
      fitView();
    },
    [show, fitView],
  );

  const liveEdgeCounts = useMemo(() => (liveCounts ? edgeCountsOf(liveCounts, scenarioGraph) : undefined), [liveCounts, scenarioGraph]);
  const displayEdges = useMemo(() => labelledEdges(edges, { live: liveEdgeCounts, test: testRun?.edgeCounts, stale: testStale }), [edges, testRun, liveEdgeCounts, testStale]);

  if (session.loadError) {
    return (
      <div className="page">
        <p className="field-error">{session.loadError}</p>
        <a href="#/">Back to the scenarios</a>
      </div>
    );
  }

  const errorCount = validation?.errors?.length ?? 0;
  const { baseVersion, conflict, tab } = session;
  const tabs: [Tab, string][] = [
    ['node', 'Node'],
    ['problems', `Problems${errorCount ? ` (${errorCount})` : ''}`],
    ['history', 'History'],
    ['test', 'Test'],
    ['deploy', 'Deploy'],
  ];

  return (
    <EditorContext.Provider value={ctx}>
      <div className="editor">
        <EditorToolbar
          name={name}
          baseVersion={baseVersion}
          viewing={session.viewing}
          liveElsewhere={liveElsewhere}
          archived={session.archived}
          dirty={dirty}
          deployment={deployment.status}
          canUndo={doc.past.length > 0}
          canRedo={doc.future.length > 0}
          hasNodeSelection={selected.length > 0}
          hasSelection={selected.length > 0 || edges.some((e) => e.selected)}
          onUndo={() => dispatch({ type: 'undo' })}
          onRedo={() => dispatch({ type: 'redo' })}
          onCopy={copy}
          onPaste={() => dispatch({ type: 'paste' })}
          onDelete={() => dispatch({ type: 'delete', nodeIds: selected.map((n) => n.id), edgeIds: edges.filter((e) => e.selected).map((e) => e.id) })}
          onLayout={layout}
          onToggleSave={() => act({ type: 'save-bar', open: !session.saveOpen })}
        />
        {session.saveOpen && canEdit && (
          <SaveBar
            comment={session.comment}
            nextVersion={baseVersion + 1}
            onComment={(comment) => act({ type: 'comment', comment })}
            onSave={() => save(baseVersion)}
            onClose={() => act({ type: 'save-bar', open: false })}
          />
        )}
        {conflict && (
          <ConflictView
            name={name}
            conflict={conflict}
            mine={scenarioGraph}
            onMerge={(merged) => {
              show(merged, { keepHistory: true });
              const c = toCanvas(normalizeGraph(conflict.latest.graph));
              act({
                type: 'rebased',
                version: conflict.latest.version,
                savedJson: JSON.stringify(toScenario(c.nodes, c.edges, c.rest)),
                status: `merged with version ${conflict.latest.version}: check it and save; Undo brings back your graph as it was`,
              });
            }}
            onSaveMine={() => save(conflict.latest.version)}
            onOpenLatest={() => {
              const shown = show(normalizeGraph(conflict.latest.graph), { keepHistory: true });
              act({ type: 'rebased', version: conflict.latest.version, savedJson: JSON.stringify(shown), status: 'opened the latest version; Undo brings your changes back' });
            }}
            onClose={() => act({ type: 'conflict', conflict: null })}
          />
        )}
        <div className="workspace">
          {canEdit && <Palette components={components} onAdd={(k) => addNode(k)} />}
          <div
            className="canvas"
            data-testid="canvas"
            onDragOver={(e) => {
              e.preventDefault();
              e.dataTransfer.dropEffect = 'move';
            }}
            onDrop={onDrop}
          >
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
              onNodeDragStart={() => dispatch({ type: 'checkpoint' })}
              onSelectionDragStart={() => dispatch({ type: 'checkpoint' })}
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
              {tabs
                .filter(([t]) => t !== 'test' || canEdit)
                .map(([t, label]) => (
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
                      sample={firstSample(selectedNode.id)}
                      graph={scenarioGraph}
                      node={selectedNode}
                      kind={kinds.get(kindIdOf(selectedNode.data.node))}
                      edges={edges}
                      problems={validationCurrent ? (errorsByNode.get(selectedNode.id) ?? []) : []}
                      variables={validation?.variables?.[selectedNode.id]}
                      aggregators={components.aggregators ?? []}
                      suggest={(text, caret) => suggest(selectedNode.id, text, caret)}
                      onChange={(node, key) => canEdit && dispatch({ type: 'update-node', id: selectedNode.id, node, key })}
                      onRename={(to) => {
                        if (!canEdit || !to || docRef.current.nodes.some((n) => n.id === to)) return false;
                        dispatch({ type: 'rename-node', from: selectedNode.id, to });
                        return true;
                      }}
                      onEdgeChange={(id, edge, key) => canEdit && dispatch({ type: 'update-edge', id, edge, key })}
                      onMoveEdge={(id, direction) => canEdit && dispatch({ type: 'move-case', id, direction })}
                    />
                  </fieldset>
                ) : (
                  <div className="muted" data-testid="no-selection">
                    {selected.length > 1
                      ? `${selected.length} nodes selected.`
                      : canEdit
                        ? 'Select a node to edit it, or drag one from the palette onto the canvas.'
                        : 'Select a node to see it (read-only: your role cannot edit).'}
                  </div>
                ))}
              {tab === 'problems' && <ProblemsPanel validation={validation} onJump={jumpTo} />}
              {tab === 'history' && (
                <>
                  {session.comparison && <ComparisonView comparison={session.comparison.comparison} moved={session.comparison.moved} onClose={() => act({ type: 'clear-comparison' })} />}
                  <VersionsPanel
                    name={name}
                    latestVersion={baseVersion}
                    onOpen={openVersion}
                    onCompare={(comparison, to, moved) => {
                      openVersion(to);
                      act({ type: 'compared', comparison, moved });
                    }}
                  />
                </>
              )}
              {tab === 'test' && canEdit && (
                <TestPanel
                  name={name}
                  graph={scenarioGraph}
                  records={records}
                  onRecords={setRecords}
                  recordsNotKept={recordsNotKept}
                  inferredFor={inferredFor}
                  onGenerateSchema={generateSchemas}
                  selectedId={selectedNode?.id}
                  run={testRun}
                  onRun={setTestRun}
                  stale={testStale}
                  liveShown={!!liveCounts}
                />
              )}
              {tab === 'deploy' && (
                <DeployPanel
                  name={name}
                  version={baseVersion}
                  dirty={dirty}
                  savedErrors={!dirty && validationCurrent ? errorCount : 0}
                  collectSinks={nodes.filter((n) => kindIdOf(n.data.node) === 'Sink/collect').map((n) => n.id)}
                  deployment={deployment}
                />
              )}
            </div>
          </aside>
        </div>
        <footer className="statusbar">
          <span data-testid="status">{session.status}</span>
          <span className="spacer" />
          <button type="button" className={`linklike ${errorCount ? 'has-errors' : ''}`} onClick={() => setTab('problems')} data-testid="problem-count">
            {validation ? (errorCount ? `${errorCount} error${errorCount === 1 ? '' : 's'}` : 'valid') : '…'}
          </button>
        </footer>
      </div>
    </EditorContext.Provider>
  );
}
