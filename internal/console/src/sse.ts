// Server-Sent Events over fetch: the event stream takes the token only as
// a bearer header, which EventSource cannot send, so the console reads the
// stream itself (a ReadableStream), parses it as the SSE spec says, and
// reconnects after a drop with Last-Event-ID (the id of the last message
// it received) and a growing, jittered delay.
import { ApiError, errorOf, parseJSON, type Paths, type PlantEvent } from './api';
import * as session from './session';
import { sleep } from './ui';

// The operation this reads; a contract without it fails the type check.
const streamPath: keyof Paths = '/events/stream';

export interface Message {
  id: string | null; // null: the message set none (the last id stays)
  event: string;
  data: string;
}

// Parser turns chunks of text into messages (WHATWG HTML, "event stream
// interpretation"): lines end with CRLF, LF or CR; a blank line dispatches;
// lines starting with ":" are comments; retry sets the reconnection delay.
export class Parser {
  private buf = '';
  private data: string[] = [];
  private event = '';
  private id: string | null = null;
  private sawCR = false;
  retry: number | null = null;

  feed(chunk: string): Message[] {
    const out: Message[] = [];
    let text = chunk;
    if (this.sawCR && text.startsWith('\n')) text = text.slice(1); // the LF of a CRLF split across chunks
    this.sawCR = false;
    this.buf += text;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) break;
      if (m[0] === '\r' && m.index === this.buf.length - 1) {
        this.sawCR = true; // may be the first half of CRLF
      }
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      const msg = this.line(line);
      if (msg) out.push(msg);
    }
    return out;
  }

  private line(line: string): Message | null {
    if (line === '') {
      if (this.data.length === 0) { this.event = ''; return null; }
      const msg: Message = { id: this.id, event: this.event || 'message', data: this.data.join('\n') };
      this.data = [];
      this.event = '';
      this.id = null;
      return msg;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (name) {
      case 'data': this.data.push(value); break;
      case 'event': this.event = value; break;
      case 'id': if (!value.includes('\0')) this.id = value; break;
      case 'retry': if (/^\d+$/.test(value)) this.retry = Number(value); break;
      default: break;
    }
    return null;
  }
}

export type State =
  | { kind: 'connecting' }
  | { kind: 'open' }
  | { kind: 'waiting'; ms: number; why: string };

export interface StreamOptions {
  after: string; // start after this seq
  signal: AbortSignal;
  onEvent: (e: PlantEvent, id: string) => void;
  onState: (s: State) => void;
  onUnauthorized: (message: string) => void;
}

const minDelay = 500;
const maxDelay = 15_000;

// stream follows GET /events/stream until signal aborts. It rejects only
// for an answer that retrying cannot fix (400, 403, 404, ...).
export async function stream(o: StreamOptions): Promise<void> {
  let last: string | null = null; // the id of the last message received
  let failures = 0;
  let serverRetry: number | null = null;
  while (!o.signal.aborted) {
    o.onState({ kind: 'connecting' });
    const headers: Record<string, string> = { Accept: 'text/event-stream' };
    const t = session.token();
    if (t) headers.Authorization = `Bearer ${t}`;
    // The first connection starts after o.after; later ones resume after
    // the last message received, as EventSource does.
    let url: string = streamPath;
    if (last !== null) headers['Last-Event-ID'] = last;
    else url += `?after=${encodeURIComponent(o.after)}`;
    let why = '';
    try {
      const res = await fetch(url, { headers, signal: o.signal, cache: 'no-store' });
      if (!res.ok) {
        const text = await res.text();
        let body: unknown = text;
        try { body = parseJSON(text); } catch { /* not JSON */ }
        const err = errorOf(body, res);
        if (res.status === 401) { o.onUnauthorized(err.message); return; }
        if (res.status !== 429 && res.status < 500) throw err;
        why = err.message;
        const ra = Number(res.headers.get('Retry-After'));
        if (ra > 0) serverRetry = Math.min(ra * 1000, 60_000);
      } else if (!res.body) {
        why = 'the stream has no body';
      } else {
        o.onState({ kind: 'open' });
        const parser = new Parser();
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            for (const m of parser.feed(value)) {
              if (m.id !== null) last = m.id;
              failures = 0;
              if (m.data === '') continue;
              let ev: unknown;
              try { ev = parseJSON(m.data); } catch { continue; }
              if (isEvent(ev)) o.onEvent(ev, m.id ?? String(ev.seq));
            }
            if (parser.retry !== null) serverRetry = parser.retry;
          }
        } finally {
          reader.releaseLock();
        }
        why = 'the server closed the stream';
      }
    } catch (e) {
      if (o.signal.aborted) return;
      if (e instanceof ApiError) throw e;
      why = e instanceof Error ? e.message : String(e);
    }
    failures++;
    const base = Math.max(serverRetry ?? minDelay, minDelay);
    const delay = Math.min(base * 2 ** Math.min(failures - 1, 8), maxDelay) * (0.8 + Math.random() * 0.4);
    o.onState({ kind: 'waiting', ms: Math.round(delay), why });
    try {
      await sleep(delay, o.signal);
    } catch {
      return;
    }
  }
}

function isEvent(v: unknown): v is PlantEvent {
  return typeof v === 'object' && v !== null && 'type' in v && 'seq' in v && 'data' in v && typeof v.data === 'object' && v.data !== null;
}
