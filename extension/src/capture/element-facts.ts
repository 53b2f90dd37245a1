/**
 * What the page says of each marked element an action may target, read from the DOM (never
 * from a model): the daemon's guards decide from these (daemon/sessions/guards.py). The demo's
 * text browser computes the same facts from its parsed HTML (daemon/demo/element_facts.py,
 * the same rules):
 *
 * - a link with an `href`: its absolute target and its `download` attribute;
 * - a submit button or input: the form's method (upper case) and action (absolute), the
 *   button's `formmethod` / `formaction` first;
 * - a text field whose Enter submits its form (HTML's implicit submission: through the form's
 *   default button, or with no such button when it is the form's only text field);
 * - anything inside a link or a submit button carries that link's or button's facts.
 *
 * Attributes are read, not the form's reflected properties: a page's `<input name="action">`
 * would shadow `form.action`. `collectElementFacts` runs in each frame's main world through
 * CDP, so it must stay self-contained (serialized with `Function.prototype.toString`).
 */

export interface ElementFactsWire {
  tag: string;
  href?: string;
  download?: boolean;
  submits?: boolean;
  form_method?: string;
  form_action?: string;
}

export const MAX_ELEMENTS = 20_000;

export function collectElementFacts(
  this: Document,
  bidAttr: string,
  overlayAttr: string,
  max: number,
): Record<string, ElementFactsWire> {
  const doc = this;
  const TEXT = new Set([
    "text", "search", "url", "tel", "email", "password", "date", "month", "week", "time",
    "datetime-local", "number",
  ]);
  const METHODS: Record<string, string> = { get: "GET", post: "POST", dialog: "DIALOG" };
  const lower = (el: Element) => el.tagName.toLowerCase();
  const attr = (el: Element, name: string) => el.getAttribute(name);
  const absolute = (value: string | null): string => {
    try {
      return new URL(value ?? "", doc.baseURI).href;
    } catch {
      return value ?? "";
    }
  };
  const inputType = (el: Element) => ((attr(el, "type") ?? "text").trim().toLowerCase() || "text");
  const isSubmitter = (el: Element): boolean => {
    const tag = lower(el);
    if (tag === "button") {
      const t = (attr(el, "type") ?? "submit").trim().toLowerCase();
      return t !== "button" && t !== "reset";
    }
    return tag === "input" && (inputType(el) === "submit" || inputType(el) === "image");
  };
  const activates = (el: Element): Element | null => {
    for (let at: Element | null = el; at; at = at.parentElement) {
      if (lower(at) === "a" && at.hasAttribute("href")) return at;
      if (isSubmitter(at)) return at;
    }
    return null;
  };
  const formOf = (el: Element): Element | null => el.closest("form");
  const submits = (tag: string, form: Element, submitter: Element | null): ElementFactsWire => {
    const method = submitter?.hasAttribute("formmethod") ? attr(submitter, "formmethod") : (attr(form, "method") ?? "get");
    const action = submitter && attr(submitter, "formaction") ? attr(submitter, "formaction") : (attr(form, "action") ?? "");
    return {
      tag,
      submits: true,
      form_method: METHODS[(method ?? "").trim().toLowerCase()] ?? "GET",
      form_action: absolute(action),
    };
  };
  const factsOf = (el: Element): ElementFactsWire | null => {
    const tag = lower(el);
    const target = activates(el);
    if (target !== null && lower(target) === "a") {
      return { tag, href: absolute(attr(target, "href")), download: target.hasAttribute("download") };
    }
    if (target !== null) {
      const form = formOf(target);
      return form === null ? null : submits(tag, form, target);
    }
    if (tag === "input" && TEXT.has(inputType(el))) {
      const form = formOf(el);
      if (form === null) return null;
      const inForm = Array.from(form.querySelectorAll("button, input"));
      const byDefault = inForm.find(isSubmitter) ?? null;
      const fields = inForm.filter((f) => lower(f) === "input" && TEXT.has(inputType(f)));
      if (byDefault === null && fields.length > 1) return null; // Enter submits nothing
      return submits(tag, form, byDefault);
    }
    return null;
  };

  const out: Record<string, ElementFactsWire> = {};
  let n = 0;
  const visit = (root: ParentNode) => {
    for (const el of Array.from(root.querySelectorAll("*"))) {
      if (n >= max) return;
      if (el.hasAttribute(overlayAttr)) continue;
      const bid = el.getAttribute(bidAttr);
      if (bid !== null) {
        const facts = factsOf(el);
        if (facts !== null) {
          out[bid] = facts;
          n++;
        }
      }
      if (el.shadowRoot) visit(el.shadowRoot);
    }
  };
  visit(doc);
  return out;
}
