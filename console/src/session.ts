// The signed-in token. It lives in sessionStorage only (gone when the tab
// closes, removed on Sign out), never in a cookie or localStorage, and is
// sent only as the Authorization header of the console's own API calls.
//
// Scopes: the API has no way yet to say what a token may do (GET /me is
// coming), so scopes are unknown: can() says yes to everything, every
// control is shown, and a 403 is shown as the API's message. When GET /me
// exists, refresh() fills scopes and can() hides what the token lacks.

const key = 'plantstore.console.token';

export interface Session {
  token: string;
  // null: unknown (every control shown).
  scopes: ReadonlySet<string> | null;
}

let current: Session | null = null;

// load returns the session kept in this tab, if any.
export function load(): Session | null {
  let token: string | null = null;
  try {
    token = sessionStorage.getItem(key);
  } catch {
    token = null; // storage disabled: sign in again on each load
  }
  current = token ? { token, scopes: null } : null;
  return current;
}

export function session(): Session | null {
  return current;
}

export function token(): string | null {
  return current ? current.token : null;
}

export function start(t: string): Session {
  current = { token: t, scopes: null };
  try {
    sessionStorage.setItem(key, t);
  } catch {
    // kept in memory only
  }
  return current;
}

export function end(): void {
  current = null;
  try {
    sessionStorage.removeItem(key);
  } catch {
    // nothing kept
  }
}

// can reports whether the session's token may use an operation needing
// scope; with unknown scopes, yes (the API answers 403 otherwise).
export function can(scope: string): boolean {
  if (!current) return false;
  return current.scopes === null || current.scopes.has(scope);
}

// Scopes the console's controls need (the contract's security section).
export const scopes = {
  plantsRead: 'plants:read',
  plantsWrite: 'plants:write',
  webhooksManage: 'webhooks:manage',
} as const;
