/**
 * What the page says of each marked element an action may target, read from the DOM (never
 * from a model): the daemon's guards predict from these (daemon/sessions/guards.py). The
 * demo's text browser computes the same facts from its parsed HTML for the pages it serves
 * (daemon/demo/element_facts.py):
 *
 * - a link (`a` or `area` with an `href`): its absolute target and its `download` attribute;
 * - a submit button or input (a `button` of type submit, an `input` of type submit or image):
 *   the method (upper case) and action (absolute) of its form owner as HTML associates them
 *   (`el.form`: the `form=` attribute first, else the nearest form ancestor; none when `form=`
 *   names no form), the button's `formmethod` / `formaction` first;
 * - a text field whose Enter submits its form owner (HTML's implicit submission: through the
 *   form's default button, its first submit button in `form.elements` order, or with no such
 *   button when it is the only field that blocks implicit submission);
 * - a `label` (or anything in one) whose labeled control (`label.control`, `for=` first) is
 *   a submit button: a click on it clicks the button;
 * - anything inside a link or a submit button carries that link's or button's facts.
 *
 * Attributes and the form's own lists are read through the DOM's prototypes, never as the
 * form's properties: a page's `<input name="action">` (or `name="getAttribute"`) shadows the
 * form's property of that name. `collectElementFacts` runs in an isolated world of each frame
 * (capture-axtree.ts), where a page script's overrides of `Element.prototype` and the like do
 * not reach; it must stay self-contained (serialized with `Function.prototype.toString`).
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
  const win = doc.defaultView ?? globalThis;
  const TEXT = new Set([
    "text", "search", "url", "tel", "email", "password", "date", "month", "week", "time",
    "datetime-local", "number",
  ]);
  const METHODS: Record<string, string> = { get: "GET", post: "POST", dialog: "DIALOG" };
  const getter = (proto: object, name: string) => Object.getOwnPropertyDescriptor(proto, name)!.get!;
  const E = win.Element.prototype;
  const getAttribute = E.getAttribute;
  const hasAttribute = E.hasAttribute;
  const formElements = getter(win.HTMLFormElement.prototype, "elements");
  const labelControl = getter(win.HTMLLabelElement.prototype, "control");
  const FORM_OWNERS = ["HTMLButtonElement", "HTMLInputElement", "HTMLSelectElement", "HTMLTextAreaElement", "HTMLObjectElement", "HTMLOutputElement", "HTMLFieldSetElement"] as const;
  const ownerGetters = FORM_OWNERS.map((name) => [(win as unknown as Record<string, { prototype: object }>)[name]!, getter((win as unknown as Record<string, { prototype: object }>)[name]!.prototype, "form")] as const);
  const lower = (el: Element) => el.localName.toLowerCase();
  const attr = (el: Element, name: string): string | null => getAttribute.call(el, name);
  const has = (el: Element, name: string): boolean => hasAttribute.call(el, name);
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
  /** The element's form owner (HTML's association: `form=`, else the nearest form ancestor). */
  const formOf = (el: Element): Element | null => {
    for (const [ctor, get] of ownerGetters) {
      if (el instanceof (ctor as unknown as typeof Element)) return (get.call(el) as Element | null) ?? null;
    }
    return null;
  };
  const activates = (el: Element): Element | null => {
    for (let at: Element | null = el; at; at = at.parentElement) {
      const tag = lower(at);
      if ((tag === "a" || tag === "area") && has(at, "href")) return at;
      if (isSubmitter(at)) return at;
      if (tag === "label") {
        const control = labelControl.call(at) as Element | null;
        if (control && isSubmitter(control)) return control;
      }
    }
    return null;
  };
  const submits = (tag: string, form: Element, submitter: Element | null): ElementFactsWire => {
    const method = submitter && has(submitter, "formmethod") ? attr(submitter, "formmethod") : (attr(form, "method") ?? "get");
    const action = submitter && has(submitter, "formaction") ? attr(submitter, "formaction") : (attr(form, "action") ?? "");
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
    if (target !== null && (lower(target) === "a" || lower(target) === "area")) {
      return { tag, href: absolute(attr(target, "href")), download: has(target, "download") };
    }
    if (target !== null) {
      const form = formOf(target);
      return form === null ? null : submits(tag, form, target);
    }
    if (tag === "input" && TEXT.has(inputType(el))) {
      const form = formOf(el);
      if (form === null) return null;
      const owned = Array.from(formElements.call(form) as HTMLCollection);
      const byDefault = owned.find(isSubmitter) ?? null;
      const fields = owned.filter((f) => lower(f) === "input" && TEXT.has(inputType(f)));
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
      if (has(el, overlayAttr)) continue;
      const bid = attr(el, bidAttr);
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
