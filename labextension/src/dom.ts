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

/**
 * Set an element's text only when it differs.  Writing the same text would
 * still replace the text node, and with it the user's text selection.
 */
export function setText(el: HTMLElement, text: string): void {
  if (el.textContent !== text) {
    el.textContent = text;
  }
}

const OPENERS: Record<string, string> = { '[': ']', '(': ')', '{': '}' };

/**
 * Split a signature's text into its arguments at the top-level commas:
 * `x: float32[2, 3], cfg: {'a': 1, 'b': 2}` gives `x: float32[2, 3]` and
 * `cfg: {'a': 1, 'b': 2}`.  Commas inside brackets or quotes do not split, so
 * each argument can be shown as one unbreakable token.
 */
export function splitArguments(text: string): string[] {
  const out: string[] = [];
  const closers: string[] = [];
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') {
        i++;
      } else if (c === quote) {
        quote = null;
      }
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c in OPENERS) {
      closers.push(OPENERS[c]);
    } else if (c === closers[closers.length - 1]) {
      closers.pop();
    } else if (c === ',' && closers.length === 0) {
      out.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  const last = text.slice(start).trim();
  if (last || out.length > 0) {
    out.push(last);
  }
  return out.filter(arg => arg.length > 0);
}
