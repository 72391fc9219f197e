/** The page's element with this id; the HTML shell (overview.html) has every id the script uses. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`overview page: no element #${id}`);
  return found as T;
}

export type Child = Node | string | number;

/** An element with attributes and children; strings become text nodes, so data never becomes markup. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  children: readonly Child[] = [],
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// The page's one duration format, the CLI's.
export { dur } from './duration.js';

export function bytes(n: number): string {
  if (n < 1024) return n + ' B';
  if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
  if (n < 1073741824) return (n / 1048576).toFixed(1) + ' MiB';
  return (n / 1073741824).toFixed(2) + ' GiB';
}

/** A time of day in UTC, like every time on the page: `13:45:07Z`. */
export function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19) + 'Z';
}

/** A number in at most three significant digits with an SI suffix (`950`, `1.14k`, `200k`, `2.5M`), as chart axes write them. */
export function compact(v: number): string {
  const a = Math.abs(v);
  for (const [div, suffix] of [
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ] as const)
    if (a >= div) return String(+(v / div).toPrecision(3)) + suffix;
  return String(+v.toPrecision(3));
}

export function num(v: number | null | undefined): string {
  return v === null || v === undefined ? '-' : String(v);
}

/** What the page's error line says about a failed request. */
export function errorText(err: unknown): string {
  return err instanceof Error && err.message ? err.message : String(err);
}
