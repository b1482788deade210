// Client-side navigation between console paths (History API).
let renderer: () => void = () => {};
let notice = '';

export const base = '/console';

export function setRenderer(f: () => void): void {
  renderer = f;
}

// navigate goes to a console path and renders it; note, if given, is shown
// on the next page (e.g. "Plant 7 deleted.").
export function navigate(path: string, note = ''): void {
  notice = note;
  history.pushState(null, '', path);
  renderer();
}

// replaceQuery changes the current URL's query without rendering again.
export function replaceQuery(q: URLSearchParams): void {
  const s = q.toString();
  history.replaceState(null, '', location.pathname + (s ? `?${s}` : ''));
}

// pushQuery adds a history entry with the current path and query q, without
// rendering again (the page shows it in place; Back renders the one before).
export function pushQuery(q: URLSearchParams): void {
  const s = q.toString();
  history.pushState(null, '', location.pathname + (s ? `?${s}` : ''));
}

// takeNotice returns the note navigate was given, once.
export function takeNotice(): string {
  const n = notice;
  notice = '';
  return n;
}
