// The window timeline of an aggregate in a test run: a lane per key, time along the x axis, each
// window a bar labelled with its value, events as ticks (late ones as orange crosses), the
// watermark as a dashed line. Drawn on a canvas, only the lanes in view (the canvas stays the
// height of the view and is redrawn on scroll), so that thousands of records stay smooth;
// hovering shows the record or result under the pointer.
import { useEffect, useMemo, useRef, useState } from 'react';
import type { Timeline, TimelineEvent, TimelineWindow } from '../graph/timeline';

const LANE = 22;
const AXIS = 22;
const LEFT = 96;
const VIEW = 320;

type Hit = { x: number; y: number; text: string };

function fmt(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('.000Z', 'Z');
}

export function WindowTimeline({ timeline, nodeId, startedAt }: { timeline: Timeline; nodeId: string; startedAt?: number }) {
  const scroller = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const [width, setWidth] = useState(400);
  const [scrollTop, setScrollTop] = useState(0);
  const [hit, setHit] = useState<Hit | null>(null);
  const [readyMs, setReadyMs] = useState<number | null>(null);
  const { lanes, t0, t1 } = timeline;
  const height = Math.min(VIEW, AXIS + lanes.length * LANE + 4);
  const plotWidth = Math.max(40, width - LEFT - 8);
  const x = (t: number) => LEFT + ((t - t0) / (t1 - t0)) * plotWidth;

  // Per lane, its windows and events, for drawing the lanes in view and for hovering.
  const byLane = useMemo(() => {
    const out = lanes.map(() => ({ windows: [] as TimelineWindow[], events: [] as TimelineEvent[] }));
    for (const w of timeline.windows) out[w.lane].windows.push(w);
    for (const e of timeline.events) out[e.lane].events.push(e);
    return out;
  }, [timeline, lanes]);

  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    setWidth(el.clientWidth);
    return () => ro.disconnect();
  }, []);

  useEffect(() => {
    const c = canvas.current;
    if (!c) return;
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.round(width * dpr);
    c.height = Math.round(height * dpr);
    const g = c.getContext('2d');
    if (!g) return;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    g.font = '11px ui-monospace, Menlo, monospace';
    g.textBaseline = 'middle';
    const first = Math.max(0, Math.floor(scrollTop / LANE));
    const last = Math.min(lanes.length, Math.ceil((scrollTop + height - AXIS) / LANE));
    for (let i = first; i < last; i++) {
      const y = AXIS + i * LANE - scrollTop;
      if (i % 2 === 0) {
        g.fillStyle = '#f6f7fa';
        g.fillRect(0, y, width, LANE);
      }
      g.fillStyle = '#1d2330';
      g.save();
      g.beginPath();
      g.rect(0, y, LEFT - 4, LANE);
      g.clip();
      g.fillText(lanes[i], 4, y + LANE / 2);
      g.restore();
      for (const w of byLane[i].windows) {
        const x0 = x(w.start);
        const x1 = Math.max(x0 + 1, x(w.end));
        g.fillStyle = 'rgba(37, 99, 235, 0.18)';
        g.fillRect(x0, y + 3, x1 - x0, LANE - 6);
        g.strokeStyle = 'rgba(37, 99, 235, 0.8)';
        g.strokeRect(x0 + 0.5, y + 3.5, x1 - x0 - 1, LANE - 7);
        const tw = g.measureText(w.label).width;
        if (tw + 4 < x1 - x0) {
          g.fillStyle = '#1e3a8a';
          g.fillText(w.label, x0 + 2, y + LANE / 2);
        }
      }
      for (const e of byLane[i].events) {
        const ex = Math.round(x(e.t)) + 0.5;
        if (e.late) {
          g.strokeStyle = '#d97706';
          g.lineWidth = 2;
          g.beginPath();
          g.moveTo(ex - 4, y + 4);
          g.lineTo(ex + 4, y + LANE - 4);
          g.moveTo(ex + 4, y + 4);
          g.lineTo(ex - 4, y + LANE - 4);
          g.stroke();
          g.lineWidth = 1;
        } else {
          g.strokeStyle = '#1d2330';
          g.beginPath();
          g.moveTo(ex, y + 6);
          g.lineTo(ex, y + LANE - 6);
          g.stroke();
        }
      }
    }
    // The axis, over the lanes, with the first, middle and last time.
    g.fillStyle = '#fff';
    g.fillRect(0, 0, width, AXIS);
    g.strokeStyle = '#d9dde6';
    g.beginPath();
    g.moveTo(0, AXIS - 0.5);
    g.lineTo(width, AXIS - 0.5);
    g.stroke();
    g.fillStyle = '#6b7385';
    g.textAlign = 'left';
    g.fillText(fmt(t0), LEFT, AXIS / 2);
    g.textAlign = 'right';
    g.fillText(fmt(t1), LEFT + plotWidth, AXIS / 2);
    g.textAlign = 'left';
    if (timeline.watermark !== undefined && timeline.watermark >= t0 && timeline.watermark <= t1) {
      const wx = Math.round(x(timeline.watermark)) + 0.5;
      g.strokeStyle = '#c62828';
      g.setLineDash([4, 3]);
      g.beginPath();
      g.moveTo(wx, AXIS - 6);
      g.lineTo(wx, height);
      g.stroke();
      g.setLineDash([]);
    }
    if (readyMs === null && startedAt !== undefined) setReadyMs(performance.now() - startedAt);
  }, [timeline, byLane, width, height, scrollTop, t0, t1, lanes, plotWidth, startedAt, readyMs]);

  const onMove = (ev: React.MouseEvent<HTMLCanvasElement>) => {
    const box = ev.currentTarget.getBoundingClientRect();
    const px = ev.clientX - box.left;
    const py = ev.clientY - box.top;
    const i = Math.floor((py - AXIS + scrollTop) / LANE);
    if (py < AXIS || i < 0 || i >= lanes.length || px < LEFT) return setHit(null);
    const t = t0 + ((px - LEFT) / plotWidth) * (t1 - t0);
    let best: TimelineEvent | undefined;
    let bestD = 5;
    for (const e of byLane[i].events) {
      const d = Math.abs(x(e.t) - px);
      if (d <= bestD) {
        best = e;
        bestD = d;
      }
    }
    if (best) {
      return setHit({ x: px, y: py, text: `${best.late ? 'late event' : 'event'}, line ${best.line}, ${fmt(best.t)}\n${JSON.stringify(best.record)}` });
    }
    const w = byLane[i].windows.find((x) => x.start <= t && t < x.end);
    if (w) return setHit({ x: px, y: py, text: `window ${fmt(w.start)} – ${fmt(w.end)}, key ${lanes[i]}\n${JSON.stringify(w.result.output)}` });
    setHit(null);
  };

  const l = timeline.listed;
  const summary = `${lanes.length} keys; ${l.windows} of ${l.totalWindows} windows and ${l.events} of ${l.totalEvents} events listed; ${timeline.events.filter((e) => e.late).length} late${
    timeline.watermark !== undefined ? `; watermark before the end of the records ${fmt(timeline.watermark)}` : ''
  }`;
  return (
    <div className="timeline" data-testid={`timeline-${nodeId}`}>
      <div className="muted small" id={`timeline-summary-${nodeId}`} data-testid="timeline-summary">
        {summary}
        {readyMs !== null && <span data-testid="timeline-ready"> · drawn {Math.round(readyMs)} ms after Run test</span>}
      </div>
      <div className="timeline-legend small">
        <span className="sw sw-window" /> window (value) <span className="sw sw-event" /> event <span className="sw sw-late">✕</span> late event <span className="sw sw-watermark" /> watermark
      </div>
      <div ref={scroller} className="timeline-scroll" style={{ height }} onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}>
        <div style={{ height: AXIS + lanes.length * LANE + 4, position: 'relative' }}>
          <canvas
            ref={canvas}
            role="img"
            aria-label="Window timeline"
            aria-describedby={`timeline-summary-${nodeId}`}
            style={{ width, height, position: 'sticky', top: 0, display: 'block' }}
            onMouseMove={onMove}
            onMouseLeave={() => setHit(null)}
            data-t0={t0}
            data-t1={t1}
            data-plot-left={LEFT}
            data-plot-width={plotWidth}
            data-lane-height={LANE}
            data-axis-height={AXIS}
            data-ready-ms={readyMs ?? undefined}
          />
        </div>
      </div>
      {hit && (
        <pre className="timeline-tip" style={{ left: Math.min(hit.x + 12, width - 220), top: hit.y + 40 }} data-testid="timeline-tip">
          {hit.text}
        </pre>
      )}
    </div>
  );
}
