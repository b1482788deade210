// The API client: openapi-fetch over the types generated from the contract
// (openapi.d.ts), with the session's bearer token, ids read losslessly, and
// one error type.
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './openapi';
import * as session from './session';

export type Plant = components['schemas']['Plant'];
export type PlantEvent = components['schemas']['PlantEvent'];
export type EventType = components['schemas']['EventType'];
export type Webhook = components['schemas']['Webhook'];
export type WebhookWithSecret = components['schemas']['WebhookWithSecret'];
export type Delivery = components['schemas']['Delivery'];
export type PingResult = components['schemas']['PingResult'];
export type Token = components['schemas']['Token'];
export type TokenWithSecret = components['schemas']['TokenWithSecret'];
export type ApiErrorBody = components['schemas']['Error'];
export type Paths = paths;
// PlantSort is an order GET /plants takes: id, name or created_at, a
// leading - for descending.
export type PlantSort = NonNullable<NonNullable<paths['/plants']['get']['parameters']['query']>['sort']>;

export const eventTypes: readonly EventType[] = ['plant.created', 'plant.updated', 'plant.deleted'];

// ApiError is a failed call: the API's status, code and message (or what
// went wrong on the way).
export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly code?: number) {
    super(message);
    this.name = 'ApiError';
  }
}

// parseJSON parses JSON keeping integers beyond 2^53-1 exact: they become
// BigInt (from the source text), which String() prints digit for digit.
// Plant ids and event seqs are int64 and the console only prints them and
// puts them in URLs; a plain JSON.parse would round them to another id.
export function parseJSON(text: string): unknown {
  return JSON.parse(text, (_key: string, value: unknown, context?: { source?: string }) => {
    if (typeof value === 'number' && !Number.isSafeInteger(value) && context?.source && /^-?\d+$/.test(context.source)) {
      return BigInt(context.source);
    }
    return value;
  });
}

// idParam turns an id read from the page (digits) into what the generated
// types call a number: a number when exact, else a BigInt, whose String()
// (what openapi-fetch writes into the path) keeps every digit.
export function idParam(text: string): number {
  const n = Number(text);
  if (Number.isSafeInteger(n)) return n;
  return BigInt(text) as unknown as number;
}

// int64 returns the canonical digits of text when it is an int64, else null.
export function int64(text: string): string | null {
  const t = text.trim();
  if (!/^-?\d{1,19}$/.test(t)) return null;
  const v = BigInt(t);
  if (v < -(2n ** 63n) || v > 2n ** 63n - 1n) return null;
  return v.toString();
}

// losslessFetch answers JSON bodies through parseJSON, and reads every
// answer's body to its end, empty ones too: Chromium reports a request whose
// body was never read as failed (net::ERR_ABORTED) once its Response is
// dropped, though the server answered (a 204 to DELETE, say).
async function losslessFetch(input: Request): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(input);
  } catch (e) {
    if (input.signal.aborted) throw e;
    throw new ApiError(0, `the server did not answer (${e instanceof Error ? e.message : String(e)})`);
  }
  const ctype = res.headers.get('Content-Type') ?? '';
  if (res.status === 204 || res.status === 205 || res.status === 304 || input.method === 'HEAD') {
    await res.arrayBuffer();
    return new Response(null, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
  if (!ctype.startsWith('application/json')) return res;
  const text = await res.text();
  const headers = new Headers(res.headers);
  headers.set('Content-Length', String(new TextEncoder().encode(text).length));
  const out = new Response(text, { status: res.status, statusText: res.statusText, headers });
  Object.defineProperty(out, 'json', { value: async () => parseJSON(text) });
  return out;
}

let onUnauthorized: (message: string) => void = () => {};

// setUnauthorizedHandler sets what a 401 does (sign out, show the message).
export function setUnauthorizedHandler(f: (message: string) => void): void {
  onUnauthorized = f;
}

const auth: Middleware = {
  onRequest({ request }) {
    const t = session.token();
    if (t) request.headers.set('Authorization', `Bearer ${t}`);
    return request;
  },
};

export const api = createClient<paths>({ baseUrl: '', fetch: losslessFetch });
api.use(auth);

// errorOf makes an ApiError of a failed call's answer.
export function errorOf(error: unknown, response: Response): ApiError {
  let message = `HTTP ${response.status} ${response.statusText}`.trim();
  let code: number | undefined;
  if (error && typeof error === 'object' && 'message' in error && typeof error.message === 'string') {
    message = error.message;
    if ('error' in error && typeof error.error === 'number') code = error.error;
  } else if (typeof error === 'string' && error.trim() !== '') {
    message = error.trim().slice(0, 500);
  }
  return new ApiError(response.status, message, code);
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

// ok returns a successful call's data and response, or throws its ApiError
// (after signing out on a 401).
export async function ok<T>(call: Promise<Answer<T>>): Promise<{ data: T; response: Response }> {
  const r = await call;
  if (r.response.ok) {
    return { data: r.data as T, response: r.response };
  }
  const err = errorOf(r.error, r.response);
  if (r.response.status === 401) onUnauthorized(err.message);
  throw err;
}

// nextCursor returns the query of the Link rel="next" URL, or null.
export function nextCursor(res: Response): URLSearchParams | null {
  const link = res.headers.get('Link');
  if (!link) return null;
  for (const part of link.split(',')) {
    const m = /<([^>]*)>\s*;(.*)/.exec(part.trim());
    if (!m || !m[1] || !m[2]) continue;
    if (!/(^|;)\s*rel\s*=\s*"?next"?\s*(;|$)/.test(m[2])) continue;
    return new URL(m[1], location.origin).searchParams;
  }
  return null;
}

// lastSeq finds the owner's latest event seq (0: none) with O(log n)
// one-event reads: the API lists events oldest first, and seqs have no gaps.
export async function lastSeq(signal: AbortSignal): Promise<number> {
  const after = async (a: number): Promise<number | null> => {
    const { data } = await ok(api.GET('/events', { params: { query: { after: a, limit: 1 } }, signal }));
    const first = data[0];
    return first ? Number(first.seq) : null;
  };
  const first = await after(0);
  if (first === null) return 0;
  let lo = first;
  let step = 1;
  for (let i = 0; i < 60; i++) {
    const s = await after(lo + step);
    if (s === null) break;
    lo = s;
    step *= 2;
  }
  let hi = lo + step; // no event after hi
  for (let i = 0; i < 64 && lo < hi; i++) {
    const mid = Math.ceil((lo + hi) / 2);
    const s = await after(mid - 1);
    if (s === null) hi = mid - 1;
    else lo = s;
  }
  return lo;
}
