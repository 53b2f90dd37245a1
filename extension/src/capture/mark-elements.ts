/**
 * The page-side half of BrowserGym's element marking, run in each frame's main
 * world through CDP (`Runtime.callFunctionOn`, `this` = the frame's document).
 *
 * Same behaviour as BrowserGym's `frame_mark_elements.js` (standard HTML tags,
 * per-window counters so bids stay stable across steps, iframe letters, the bid
 * smuggled through aria-roledescription / aria-description, the visibility
 * ratio from an IntersectionObserver, the set-of-marks flag), written anew.
 * One addition: the webshepherd overlay's host element (and everything in its
 * shadow root) is never marked, so the page's bids do not depend on it.
 *
 * Both functions must stay self-contained: they are serialized with
 * `Function.prototype.toString` and evaluated in the page.
 *
 * Marking stays in the main world, as BrowserGym's does: its per-window counters
 * (`browsergym_elem_counter`) are the ones BrowserGym's own marking reads in the same page,
 * so bids agree between the two. A page can lie to it, as it can rewrite its own DOM; the
 * guards' facts are read in an isolated world instead (element-facts.ts).
 */

export const BID_ATTR = "bid";
export const OVERLAY_HOST_ATTR = "data-webshepherd-overlay";

export async function markFrameElements(
  this: Document,
  parentBid: string,
  bidAttr: string,
  overlayAttr: string,
): Promise<string[]> {
  const doc = this;
  const win = doc.defaultView as (Window & typeof globalThis & Record<string, unknown>) | null;
  if (!win) return ["frame has no window"];
  const STANDARD = new Set(
    ("a abbr acronym address applet area article aside audio b base basefont bdi bdo big blockquote " +
      "body br button canvas caption center cite code col colgroup data datalist dd del details dfn " +
      "dialog dir div dl dt em embed fieldset figcaption figure font footer form frame frameset h1 h2 " +
      "h3 h4 h5 h6 head header hgroup hr html i iframe img input ins kbd label legend li link main map " +
      "mark menu meta meter nav noframes noscript object ol optgroup option output p param picture pre " +
      "progress q rp rt ruby s samp script search section select small source span strike strong style " +
      "sub summary sup svg table tbody td template textarea tfoot th thead time title tr track tt u ul " +
      "var video wbr").split(" "),
  );
  const SOM_TAGS = new Set(["input", "textarea", "select", "button", "a", "iframe", "video", "li", "td", "option"]);
  const LETTERS = "abcdefghijklmnopqrstuvwxyz";

  const firstVisit = !("browsergym_elem_counter" in win);
  if (firstVisit) {
    win.browsergym_elem_counter = 0;
    // Frame letters: a..z, then aA..zZ style (first letter lower case, the rest upper).
    const digits = [0];
    win.browsergym_frame_id_generator = {
      next(): string {
        const id = digits
          .map((d, i) => (i < digits.length - 1 ? LETTERS[d]!.toUpperCase() : LETTERS[d]!))
          .reverse()
          .join("");
        let i = 0;
        for (; i < digits.length; i++) {
          digits[i]! += 1;
          if (digits[i]! < LETTERS.length) break;
          digits[i] = 0;
        }
        if (i === digits.length) digits.push(0);
        return id;
      },
    };
  }
  const frameIds = win.browsergym_frame_id_generator as { next(): string };

  const pending = new Set<Element>();
  let allVisited: (() => void) | null = null;
  const observer = new win.IntersectionObserver(
    (entries) => {
      for (const entry of entries) {
        entry.target.setAttribute("browsergym_visibility_ratio", String(Math.round(entry.intersectionRatio * 100) / 100));
        pending.delete(entry.target);
      }
      if (pending.size === 0) allVisited?.();
    },
    { threshold: [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1] },
  );

  const deepest = (x: number, y: number): Element | null => {
    let root: Document | ShadowRoot | null | undefined = doc;
    let found: Element | null = null;
    let previous: Element | null = null;
    do {
      previous = found;
      found = root.elementFromPoint(x, y);
      root = found?.shadowRoot;
    } while (root && found !== previous);
    return found;
  };
  const centreClickGoesTo = (el: Element): "self" | "child" | "other" => {
    const r = el.getBoundingClientRect();
    const hit = deepest((r.left + r.right) / 2, (r.top + r.bottom) / 2);
    if (!hit) return "other";
    if (hit === el) return "self";
    return el.contains(hit) ? "child" : "other";
  };
  const prefixAria = (el: Element, attr: string, bid: string) => {
    el.setAttribute(attr, `browsergym_id_${bid} ${el.getAttribute(attr) ?? ""}`);
  };

  const seen = new Set<string>();
  const somButtons: Element[] = [];
  // Document order, with each open shadow root's elements right after their host (not the overlay's).
  const queue: Element[] = [];
  const collect = (root: ParentNode) => {
    for (const el of Array.from(root.querySelectorAll("*"))) {
      if (el.hasAttribute(overlayAttr)) continue;
      queue.push(el);
      if (el.shadowRoot) collect(el.shadowRoot);
    }
  };
  collect(doc);
  for (const el of queue) {
    const tag = el.tagName.toLowerCase();
    if (!STANDARD.has(tag)) continue;

    el.setAttribute("browsergym_visibility_ratio", "0");
    pending.add(el);
    observer.observe(el);
    const field = el as Element & { value?: unknown; checked?: unknown };
    if (typeof field.value !== "undefined") el.setAttribute("value", String(field.value));
    if (typeof field.checked !== "undefined") {
      if (field.checked === true) el.setAttribute("checked", "");
      else el.removeAttribute("checked");
    }

    let bid: string | null = null;
    if (el.hasAttribute(bidAttr)) {
      if (firstVisit) throw new Error(`Attribute ${bidAttr} already used in element ${el.outerHTML}`);
      bid = el.getAttribute(bidAttr);
      if (bid !== null && seen.has(bid)) bid = null;
    }
    if (bid === null) {
      const local = tag === "iframe" || tag === "frame" ? frameIds.next() : String((win.browsergym_elem_counter as number)++);
      bid = `${parentBid}${local}`;
      el.setAttribute(bidAttr, bid);
    }
    seen.add(bid);
    prefixAria(el, "aria-roledescription", bid);
    prefixAria(el, "aria-description", bid);

    el.setAttribute("browsergym_set_of_marks", "0");
    if (centreClickGoesTo(el) === "other") continue;
    const pointy =
      SOM_TAGS.has(tag) || (el as HTMLElement).onclick != null || win.getComputedStyle(el).cursor === "pointer";
    if (!pointy) continue;
    const r = el.getBoundingClientRect();
    if ((r.right - r.left) * (r.bottom - r.top) < 20) continue;
    if (somButtons.some((b) => b.contains(el))) continue;
    const parent = el.parentElement;
    if (
      parent &&
      parent.tagName.toLowerCase() === "span" &&
      parent.children.length === 1 &&
      parent.getAttribute("role") &&
      parent.getAttribute("browsergym_set_of_marks") === "1"
    ) continue;
    el.setAttribute("browsergym_set_of_marks", "1");
    if (el.matches('button, a, input[type="button"], div[role="button"]')) somButtons.push(el);
    for (let p = parent; p; p = p.parentElement) {
      if (p.getAttribute("browsergym_set_of_marks") === "1") p.setAttribute("browsergym_set_of_marks", "0");
    }
  }

  const warnings: string[] = [];
  // Done as soon as the observer has visited every element (BrowserGym polls every 40 ms instead).
  if (pending.size > 0) {
    const visited = await new Promise<boolean>((resolve) => {
      const timer = win.setTimeout(() => resolve(false), 1000);
      allVisited = () => {
        win.clearTimeout(timer);
        resolve(true);
      };
    });
    if (!visited) warnings.push("Frame marking: not all elements have been visited by the intersection_observer after 1000 ms");
  }
  observer.disconnect();
  return warnings;
}

/** Undoes the ARIA smuggling (BrowserGym's `_post_extract`); bids and the other marks stay. */
export function unmarkFrameElements(this: Document, overlayAttr: string): void {
  const queue: Element[] = [];
  const collect = (root: ParentNode) => {
    for (const el of Array.from(root.querySelectorAll("*"))) {
      if (el.hasAttribute(overlayAttr)) continue;
      queue.push(el);
      if (el.shadowRoot) collect(el.shadowRoot);
    }
  };
  collect(this);
  for (const el of queue) {
    for (const attr of ["aria-description", "aria-roledescription"]) {
      const value = el.getAttribute(attr);
      if (value === null) continue;
      const original = value.replace(/^browsergym_id[^\s]*\s/, "");
      if (original) el.setAttribute(attr, original);
      else el.removeAttribute(attr);
    }
  }
}
