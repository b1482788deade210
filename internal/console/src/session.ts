// The signed-in token and what it may do. The token lives in sessionStorage
// only (gone when the tab closes, removed on Sign out), never in a cookie or
// localStorage, and is sent only as the Authorization header of the
// console's own API calls.
//
// Scopes: sign-in (and every page load of a kept session) asks GET /me, which
// any valid token may call, and keeps its answer here: can() says whether the
// token holds a scope, and the pages hide every control it lacks one for.
// This is a courtesy, not a defence: the API enforces scopes, and a 403 that
// still happens (a page opened by its URL, a mint beyond the token's own
// expiry) is shown as the API's message. GET /me is asked again on each load,
// never kept in storage.
import type { components } from './openapi';

export type Me = components['schemas']['Me'];
export type Scope = components['schemas']['Scope'];

const key = 'plantstore.console.token';

export interface Session {
  token: string;
  // The answer of GET /me; null until it came (no control is shown then).
  me: Me | null;
}

let current: Session | null = null;

// load returns the session kept in this tab, if any (its scopes unknown
// until setMe).
export function load(): Session | null {
  let token: string | null = null;
  try {
    token = sessionStorage.getItem(key);
  } catch {
    token = null; // storage disabled: sign in again on each load
  }
  current = token ? { token, me: null } : null;
  return current;
}

export function session(): Session | null {
  return current;
}

export function token(): string | null {
  return current ? current.token : null;
}

// me returns what GET /me answered for the session's token.
export function me(): Me | null {
  return current ? current.me : null;
}

// begin uses t for the API calls that follow without keeping it (sign-in
// checks it with GET /me first); keep stores it once it is known good.
export function begin(t: string): Session {
  current = { token: t, me: null };
  return current;
}

export function keep(): void {
  if (!current) return;
  try {
    sessionStorage.setItem(key, current.token);
  } catch {
    // kept in memory only
  }
}

// setMe records what GET /me answered for the session's token.
export function setMe(m: Me): void {
  if (current) current.me = m;
}

export function end(): void {
  current = null;
  try {
    sessionStorage.removeItem(key);
  } catch {
    // nothing kept
  }
}

// can reports whether the session's token holds scope (false until GET /me
// answered).
export function can(scope: Scope): boolean {
  return current?.me?.scopes.includes(scope) ?? false;
}

// Scopes the console's controls need (the contract's security section).
export const scopes = {
  plantsRead: 'plants:read',
  plantsWrite: 'plants:write',
  webhooksManage: 'webhooks:manage',
  tokensManage: 'tokens:manage',
} as const satisfies Record<string, Scope>;

// allScopes is the contract's Scope enum, in its order: the New token form
// offers one checkbox each. The check below fails the build when the
// contract adds a scope this list lacks.
export const allScopes = ['plants:read', 'plants:write', 'webhooks:manage', 'tokens:manage'] as const satisfies readonly Scope[];
type Unlisted = Exclude<Scope, (typeof allScopes)[number]>;
const everyScopeListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyScopeListed;
