// The console's only way to make elements. Strings become text nodes or
// attribute values, never markup: every stored string is rendered as text.

export type Child = Node | string | number | bigint | null | undefined | false | Child[];
type Handler = (e: Event) => void;
export type Attrs = Record<string, string | number | boolean | null | undefined | Handler>;

function apply(el: Element, attrs: Attrs | null | undefined): void {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === 'function') {
      if (!k.startsWith('on')) throw new Error(`dom: ${k} is not an event`);
      el.addEventListener(k.slice(2), v);
    } else if (k === 'style' || k.startsWith('on')) {
      throw new Error(`dom: attribute ${k} is not allowed`);
    } else {
      el.setAttribute(k === 'className' ? 'class' : k, v === true ? '' : String(v));
    }
  }
}

function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// h makes an HTML element: h('td', {class: 'id'}, text).
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

const svgNS = 'http://www.w3.org/2000/svg';

// s makes an SVG element.
export function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(svgNS, tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

// replace empties el and appends children.
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

let ids = 0;
// uid returns a new element id.
export function uid(prefix: string): string {
  ids++;
  return `${prefix}-${ids}`;
}

// field is a labelled input: <div class=field><label for>text</label><input id></div>,
// with a hint paragraph under it for each hint (the input is described by them).
export function field(label: string, input: HTMLInputElement | HTMLSelectElement, ...hints: string[]): HTMLDivElement {
  const id = input.id || uid('f');
  input.id = id;
  const children: Child[] = [h('label', { for: id }, label), input];
  const ids: string[] = [];
  for (const hint of hints) {
    if (!hint) continue;
    const hid = uid('hint');
    ids.push(hid);
    children.push(h('p', { class: 'hint', id: hid }, hint));
  }
  if (ids.length) input.setAttribute('aria-describedby', ids.join(' '));
  return h('div', { class: 'field' }, children);
}

// fmtTime is the console's one way to write a time: the date and the time
// of day to the second in the browser's zone, 2027-01-27 16:50:14, whatever
// the browser's language (no 1/27 against 27/1, no AM/PM, one width in a
// table). The exact instant (RFC 3339, with its offset) is timeEl's title.
export function fmtTime(t: string | number | undefined): string {
  if (t === undefined || t === '') return '';
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// timeEl is a <time> with the machine-readable value and fmtTime's text.
export function timeEl(t: string | undefined): HTMLTimeElement | string {
  if (!t) return '';
  return h('time', { datetime: t, title: t }, fmtTime(t));
}

// empty is the console's one mark of a missing value (no tag, no
// description, ...): a dash on the screen, read out as what is missing
// ("no tag"), the same on every page.
export function empty(what: string): HTMLSpanElement {
  return h('span', { class: 'none' }, h('span', { 'aria-hidden': 'true' }, '\u2014'), h('span', { class: 'visually-hidden' }, what));
}

// plural: "1 plant", "2 plants".
export function plural(n: number, one: string, many: string): string {
  return `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
}
