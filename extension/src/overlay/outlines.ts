/**
 * Outlines a candidate's target element on the page, found by its bid (the
 * `bid` attribute BrowserGym's marking leaves, also inside same-origin iframes).
 * The boxes live in the overlay's shadow root, positioned around the element.
 */
import { type Box, grow, placeBadge } from "./badge-placement.js";

export function findByBid(doc: Document, bid: string): Element | null {
  const direct = doc.querySelector(`[bid="${CSS.escape(bid)}"]`);
  if (direct) return direct;
  for (const frame of Array.from(doc.querySelectorAll("iframe, frame"))) {
    const fbid = frame.getAttribute("bid");
    if (!fbid || !bid.startsWith(fbid)) continue;
    let inner: Document | null = null;
    try {
      inner = (frame as HTMLIFrameElement).contentDocument;
    } catch {
      inner = null;
    }
    if (inner) {
      const found = findByBid(inner, bid);
      if (found) return found;
    }
  }
  return null;
}

/** The element's box in the top window's viewport coordinates. */
function topRect(el: Element): DOMRect {
  const r = el.getBoundingClientRect();
  let x = r.left;
  let y = r.top;
  let win: Window | null = el.ownerDocument.defaultView;
  while (win && win !== window.top && win.frameElement) {
    const fr = win.frameElement.getBoundingClientRect();
    x += fr.left;
    y += fr.top;
    win = win.parent;
  }
  return new DOMRect(x, y, r.width, r.height);
}

export interface OutlineSpec {
  bid: string;
  colour: string;
  label: string;
  best: boolean;
}

/** The outline's border width (styles.ts): the outline sits just outside its target. */
function borderWidth(best: boolean): number {
  return best ? 5 : 3;
}

/**
 * One outline per found target, drawn just outside it, and its badge (reward label) beside
 * the outline (badge-placement.ts): never over a target's text.
 */
export function drawOutlines(layer: HTMLElement, specs: OutlineSpec[]): void {
  layer.replaceChildren();
  const found: { spec: OutlineSpec; outline: Box; target: Box }[] = [];
  for (const spec of specs) {
    const el = findByBid(document, spec.bid);
    if (!el) continue;
    const r = topRect(el);
    const target = { left: r.left, top: r.top, width: r.width, height: r.height };
    const outline = grow(target, borderWidth(spec.best));
    found.push({ spec, outline, target });
    const box = document.createElement("div");
    box.className = spec.best ? "outline best" : "outline";
    box.dataset.testid = "ws-outline";
    box.dataset.bid = spec.bid;
    box.style.cssText = `left:${outline.left}px;top:${outline.top}px;width:${outline.width}px;height:${outline.height}px;border-color:${spec.colour}`;
    layer.append(box);
  }
  const taken: Box[] = found.map((f) => f.outline);
  const viewport = { width: window.innerWidth, height: window.innerHeight };
  const text = found.length > 0 ? textBoxes(document, viewport) : [];
  for (const { spec, outline, target } of found) {
    const tag = document.createElement("span");
    tag.className = "badge";
    tag.dataset.testid = "ws-badge";
    tag.dataset.bid = spec.bid;
    tag.textContent = spec.label;
    tag.style.cssText = `left:0;top:0;visibility:hidden;background:${spec.colour}`;
    layer.append(tag);
    const size = tag.getBoundingClientRect();
    const badge = { width: size.width, height: size.height };
    const at = placeBadge(outline, badge, viewport, taken, text, target);
    taken.push(at);
    tag.style.left = `${at.left}px`;
    tag.style.top = `${at.top}px`;
    tag.style.visibility = "";
  }
}

/** Text nodes read at most per drawing (a huge page's text beyond them is not avoided). */
const MAX_TEXT_NODES = 20000;

/**
 * The page's visible text, one box per line box of each text node, in the viewport's
 * coordinates (the overlay's own text lives in its shadow root, which this walk skips).
 */
export function textBoxes(doc: Document, viewport: { width: number; height: number }): Box[] {
  const out: Box[] = [];
  const walker = doc.createTreeWalker(doc.body ?? doc.documentElement, NodeFilter.SHOW_TEXT);
  const range = doc.createRange();
  for (let n = 0, node = walker.nextNode(); node && n < MAX_TEXT_NODES; n++, node = walker.nextNode()) {
    if (!node.nodeValue?.trim()) continue;
    range.selectNodeContents(node);
    for (const r of Array.from(range.getClientRects())) {
      const inView = r.bottom > 0 && r.right > 0 && r.top < viewport.height && r.left < viewport.width;
      if (r.width > 0 && r.height > 0 && inView) {
        out.push({ left: r.left, top: r.top, width: r.width, height: r.height });
      }
    }
  }
  return out;
}
