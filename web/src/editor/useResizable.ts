import { useCallback, useEffect, useRef, useState } from 'react';

const KEY = 'scenario-designer:side-width';
export const SIDE_MIN = 300;
const SIDE_DEFAULT = 420;

/** The largest side panel width: the window less room for the palette and some canvas. */
export function sideMax(): number {
  return Math.max(SIDE_MIN, window.innerWidth - 420);
}

export function clampWidth(w: number, max: number): number {
  return Math.round(Math.min(max, Math.max(SIDE_MIN, w)));
}

function storedWidth(): string | null {
  try {
    return localStorage.getItem(KEY);
  } catch {
    return null; // storage denied
  }
}

/**
 * The side panel's width, kept in local storage, and the props of the separator on its left
 * edge: dragged with the pointer, or moved 20 px (Shift: 100 px) with the arrow keys, Home and End.
 */
export function useResizable() {
  const [width, setWidth] = useState(() => clampWidth(Number(storedWidth()) || SIDE_DEFAULT, sideMax()));
  const [dragging, setDragging] = useState(false);
  const start = useRef<{ x: number; w: number } | null>(null);
  useEffect(() => {
    try {
      localStorage.setItem(KEY, String(width));
    } catch {
      // the storage full or denied: the width is kept while the page is open
    }
  }, [width]);
  const onPointerDown = useCallback(
    (e: React.PointerEvent) => {
      e.preventDefault();
      (e.target as HTMLElement).setPointerCapture(e.pointerId);
      start.current = { x: e.clientX, w: width };
      setDragging(true);
    },
    [width],
  );
  const onPointerMove = useCallback((e: React.PointerEvent) => {
    const s = start.current;
    if (!s) return;
    setWidth(clampWidth(s.w + (s.x - e.clientX), sideMax()));
  }, []);
  const onPointerUp = useCallback(() => {
    start.current = null;
    setDragging(false);
  }, []);
  const onKeyDown = useCallback((e: React.KeyboardEvent) => {
    const step = e.shiftKey ? 100 : 20;
    const by: Record<string, (w: number) => number> = {
      ArrowLeft: (w) => w + step,
      ArrowRight: (w) => w - step,
      Home: () => sideMax(),
      End: () => SIDE_MIN,
    };
    const f = by[e.key];
    if (!f) return;
    e.preventDefault();
    setWidth((w) => clampWidth(f(w), sideMax()));
  }, []);
  const separator = {
    role: 'separator',
    'aria-orientation': 'vertical' as const,
    'aria-label': 'Resize the side panel',
    'aria-valuenow': width,
    'aria-valuemin': SIDE_MIN,
    'aria-valuemax': sideMax(),
    tabIndex: 0,
    className: `splitter${dragging ? ' dragging' : ''}`,
    'data-testid': 'side-splitter',
    onPointerDown,
    onPointerMove,
    onPointerUp,
    onKeyDown,
  };
  return { width, separator };
}
