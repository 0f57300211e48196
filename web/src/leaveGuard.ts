// What the designer asks before it leaves the page shown for another of its pages (a link, the
// browser's Back, a typed URL): an editor with unsaved changes sets it. The browser's own
// beforeunload covers closing and reloading the tab.
let guard: (() => string | null) | null = null;

/** Sets (or, with null, clears) the guard: it returns what to ask before leaving, or null. */
export function setLeaveGuard(g: (() => string | null) | null) {
  guard = g;
}

/** What to ask before the page shown is left (null: nothing, it may be left). */
export function leaveQuestion(): string | null {
  return guard ? guard() : null;
}
