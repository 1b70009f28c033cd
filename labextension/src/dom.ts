/**
 * A tiny DOM builder.  Its one job besides brevity is safety: string children
 * become text nodes and attributes are set with `setAttribute`, so text from
 * the kernel (function names, literal argument values, reprs) can never become
 * markup.  Nothing in the extension uses `innerHTML`.
 */

export type Child = Node | string | number | null | undefined | false;

export interface IProps {
  className?: string;
  /** Attribute values; never pass kernel text as an event handler or URL. */
  attrs?: Record<string, string>;
  title?: string;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: IProps = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  applyProps(el, props);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number> = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) {
    el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

function applyProps(el: Element, props: IProps): void {
  if (props.className) {
    el.setAttribute('class', props.className);
  }
  if (props.title !== undefined) {
    el.setAttribute('title', props.title);
  }
  for (const [name, value] of Object.entries(props.attrs ?? {})) {
    el.setAttribute(name, value);
  }
}

function append(el: Element, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    el.appendChild(
      typeof child === 'string' || typeof child === 'number'
        ? document.createTextNode(String(child))
        : child
    );
  }
}

/** Format a duration in ms for people: 0.42 ms, 12.3 ms, 1.25 s. */
export function formatMs(ms: number): string {
  if (ms >= 1000) {
    return `${(ms / 1000).toFixed(2)} s`;
  }
  if (ms >= 10) {
    return `${ms.toFixed(1)} ms`;
  }
  return `${ms.toFixed(2)} ms`;
}

/** Format a duration in µs: 41 µs, 2.3 ms. */
export function formatUs(us: number | null): string {
  if (us === null) {
    return '–';
  }
  return us >= 1000 ? formatMs(us / 1000) : `${Math.round(us)} µs`;
}
