// Server-sent event streams that come back after the server refused or ended them.

/** How long the first retry waits, in ms; each next one waits twice as long, up to RETRY_MAX. */
export const RETRY_FIRST = 5_000;
export const RETRY_MAX = 60_000;

/**
 * openStream opens an EventSource on url() with the given event listeners, and opens it again
 * when the server refuses it or ends it for good: an EventSource retries by itself only after a
 * dropped connection, never after an error answer (the server answers 429 too-many-streams or
 * 503 streams-busy when it serves as many streams as it allows). onProblem gets what to show
 * while the stream is down (null once it is open again). url is read at each opening, so that
 * a stream can resume after what it has had. It returns the function that closes it for good.
 */
export function openStream(
  url: () => string,
  listeners: Record<string, (e: MessageEvent<string>) => void>,
  onProblem: (problem: string | null) => void,
): () => void {
  let source: EventSource | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let delay = RETRY_FIRST;
  let done = false;
  const open = () => {
    const s = new EventSource(url());
    source = s;
    for (const [name, f] of Object.entries(listeners)) s.addEventListener(name, f as EventListener);
    s.addEventListener('open', () => {
      delay = RETRY_FIRST;
      onProblem(null);
    });
    s.addEventListener('error', () => {
      if (done || s.readyState !== EventSource.CLOSED) return; // reconnecting by itself
      s.close();
      onProblem(`the server refused or ended the live stream (it may be serving as many as it allows); trying again in ${delay / 1000} s`);
      timer = setTimeout(open, delay);
      delay = Math.min(delay * 2, RETRY_MAX);
    });
  };
  open();
  return () => {
    done = true;
    clearTimeout(timer);
    source?.close();
  };
}
