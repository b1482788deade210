// The attempts chart: succeeded and failed delivery attempts per hour over
// the last 24 hours, stacked bars drawn as SVG by the console.
import type { Delivery } from './api';
import { fmtTime, h, replace, s } from './dom';

export interface Buckets {
  succeeded: number[]; // 24 hours, oldest first; the last ends now
  failed: number[];
  start: number; // ms of the first hour's start
}

const hour = 3_600_000;

// bucket counts attempts per hour of the 24 hours ending at now. An attempt
// succeeded when the delivery was succeeded after it; any other attempt
// (retried or given up) failed.
export function bucket(attempts: readonly Delivery[], now: number): Buckets {
  const start = now - 24 * hour;
  const b: Buckets = { succeeded: new Array<number>(24).fill(0), failed: new Array<number>(24).fill(0), start };
  for (const a of attempts) {
    const t = Date.parse(a.attempted_at);
    if (Number.isNaN(t) || t < start || t > now) continue;
    const i = Math.min(23, Math.floor((t - start) / hour));
    const row = a.state === 'succeeded' ? b.succeeded : b.failed;
    row[i] = (row[i] ?? 0) + 1;
  }
  return b;
}

const sum = (xs: number[]) => xs.reduce((a, x) => a + x, 0);

// chart draws b: an svg with role img named "Attempts in the last 24
// hours", whose description gives the totals, and a legend. The svg is
// drawn again at its box's width whenever that changes (a unit of the
// drawing is a CSS pixel), so its labels keep their 12 px on a phone instead
// of shrinking with a drawing made for a wide screen.
export function chart(b: Buckets): HTMLElement {
  const ok = sum(b.succeeded), bad = sum(b.failed);
  const desc = `${ok} succeeded and ${bad} failed attempts in the last 24 hours.`;
  const descId = `chart-desc-${Math.random().toString(36).slice(2)}`;
  const box = h('div', { class: 'chart-box' });
  let drawnW = 0;
  const draw = (width: number) => {
    const W = Math.max(280, Math.floor(width));
    if (W === drawnW) return;
    drawnW = W;
    replace(box, drawing(b, W, descId));
  };
  draw(720);
  new ResizeObserver((entries) => {
    const w = entries[0]?.contentRect.width;
    if (w) draw(w);
  }).observe(box);
  return h('figure', { class: 'chart-figure' },
    box,
    h('figcaption', { id: descId },
      h('span', { class: 'key ok' }, `Succeeded ${ok}`), ' ',
      h('span', { class: 'key bad' }, `Failed ${bad}`), ' ',
      h('span', { class: 'visually-hidden' }, desc)));
}

// drawing is the svg of b, W units wide.
function drawing(b: Buckets, W: number, descId: string): SVGSVGElement {
  const H = 200, left = 36, right = 8, top = 10, bottom = 26;
  const plotW = W - left - right, plotH = H - top - bottom;
  const totals = b.succeeded.map((x, i) => x + (b.failed[i] ?? 0));
  const max = Math.max(1, ...totals);
  const ticks = niceMax(max);
  const y = (v: number) => top + plotH - (v / ticks) * plotH;
  const bw = plotW / 24;
  const gap = bw > 8 ? 1 : 0.5;
  const bars: SVGElement[] = [];
  for (let i = 0; i < 24; i++) {
    const x = left + i * bw + gap;
    const sv = b.succeeded[i] ?? 0, fv = b.failed[i] ?? 0;
    const label = `${fmtTime(b.start + i * 3_600_000)}: ${sv} succeeded, ${fv} failed`;
    const g = s('g', null, s('title', null, label));
    if (sv > 0) g.append(s('rect', { class: 'ok', x: x.toFixed(1), width: (bw - 2 * gap).toFixed(1), y: y(sv).toFixed(1), height: (y(0) - y(sv)).toFixed(1) }));
    if (fv > 0) g.append(s('rect', { class: 'bad', x: x.toFixed(1), width: (bw - 2 * gap).toFixed(1), y: y(sv + fv).toFixed(1), height: (y(sv) - y(sv + fv)).toFixed(1) }));
    bars.push(g);
  }
  const grid: SVGElement[] = [];
  for (const v of [0, ticks / 2, ticks]) {
    grid.push(s('line', { class: 'grid', x1: left, x2: W - right, y1: y(v).toFixed(1), y2: y(v).toFixed(1) }));
    grid.push(s('text', { class: 'axis', x: left - 6, y: (y(v) + 4).toFixed(1), 'text-anchor': 'end' }, String(v)));
  }
  for (const i of [0, 6, 12, 18, 24]) {
    grid.push(s('text', { class: 'axis', x: (left + i * bw).toFixed(1), y: H - 8, 'text-anchor': i === 0 ? 'start' : i === 24 ? 'end' : 'middle' },
      i === 24 ? 'now' : `\u2212${24 - i} h`));
  }
  return s('svg', { role: 'img', 'aria-label': 'Attempts in the last 24 hours', 'aria-describedby': descId, viewBox: `0 0 ${W} ${H}`, class: 'chart' },
    grid, bars);
}

function niceMax(v: number): number {
  const step = v <= 10 ? 2 : 2 * 10 ** Math.floor(Math.log10(v / 2));
  return Math.ceil(v / step) * step;
}
