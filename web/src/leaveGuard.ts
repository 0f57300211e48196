// What is asked before the designer leaves the page shown for another of its pages (a link,
// the browser's Back, a typed URL): an editor with unsaved changes sets it. The browser's own
// beforeunload covers closing and reloading the tab.
let guard: (() => boolean) | null = null;

/** Sets (or, with null, clears) what is asked before the designer leaves the page shown. */
export function setLeaveGuard(g: (() => boolean) | null) {
  guard = g;
}

/** Whether the page shown may be left: true without a guard, else the guard's answer. */
export function mayLeave(): boolean {
  return guard ? guard() : true;
}
