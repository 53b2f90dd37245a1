/**
 * Demonstrations, page side: the person's clicks, typing, selects and scrolls in the
 * top frame become BrowserGym action strings by bid (the `bid` attributes the last
 * observation marked). Values typed into password fields are never sent: a placeholder
 * goes instead. Navigation (goto / go_back) is recorded by the worker.
 */
import { PASSWORD_PLACEHOLDER, click, fill, press, scroll, selectOption } from "./action-strings.js";
import { BID_ATTR } from "./capture/mark-elements.js";

const TEXT_INPUTS = new Set(["text", "search", "email", "url", "tel", "number", "password", "date", "datetime-local", "month", "week", "time", "color", ""]);
const SCROLL_KEYS = new Set(["PageDown", "PageUp", "ArrowDown", "ArrowUp", "ArrowLeft", "ArrowRight", "Home", "End", " "]);
const SCROLL_SETTLE_MS = 300;
/** A scroll counts as the person's when it follows their wheel / key / touch within this time. */
const SCROLL_INTENT_MS = 1000;

function bidOf(el: Element | null): string | null {
  const owner = el?.closest(`[${BID_ATTR}]`);
  return owner?.getAttribute(BID_ATTR) ?? null;
}

function isTextField(el: Element): el is HTMLInputElement | HTMLTextAreaElement {
  return el instanceof HTMLTextAreaElement || (el instanceof HTMLInputElement && TEXT_INPUTS.has(el.type));
}

function recordedValue(el: HTMLInputElement | HTMLTextAreaElement): string {
  return el instanceof HTMLInputElement && el.type === "password" ? PASSWORD_PLACEHOLDER : el.value;
}

export class DemonstrationRecorder {
  private on = false;
  private filled = new WeakMap<Element, string>();
  private suppressClickOn: Element | null = null;
  private scrollFrom = { x: 0, y: 0 };
  private scrollTimer: ReturnType<typeof setTimeout> | undefined;
  private scrollIntentAt = -Infinity;

  constructor(private readonly send: (action: string) => void) {
    const opts = { capture: true, passive: true } as const;
    window.addEventListener("click", (ev) => this.onClick(ev), opts);
    window.addEventListener("change", (ev) => this.onChange(ev), opts);
    window.addEventListener("keydown", (ev) => this.onKey(ev), opts);
    window.addEventListener("wheel", () => (this.scrollIntentAt = performance.now()), opts);
    window.addEventListener("touchmove", () => (this.scrollIntentAt = performance.now()), opts);
    window.addEventListener("scroll", () => this.onScroll(), opts);
  }

  setActive(on: boolean): void {
    this.on = on;
    this.scrollFrom = { x: window.scrollX, y: window.scrollY };
  }

  get active(): boolean {
    return this.on;
  }

  private emit(action: string) {
    this.flushScroll();
    this.send(action);
  }

  private onClick(ev: MouseEvent) {
    if (!this.on || !ev.isTrusted || !(ev.target instanceof Element)) return;
    const el = ev.target;
    if (this.suppressClickOn && el === this.suppressClickOn) return; // the click a label forwards to its control
    // typing and choosing are recorded as fill / select_option, not as the click that focused the field
    if (isTextField(el) || el instanceof HTMLSelectElement || el instanceof HTMLOptionElement) return;
    const label = el.closest("label");
    if (label?.control) {
      this.suppressClickOn = label.control;
      setTimeout(() => (this.suppressClickOn = null), 0);
    }
    const bid = bidOf(el);
    if (bid) this.emit(click(bid));
  }

  private recordFill(el: HTMLInputElement | HTMLTextAreaElement) {
    const value = recordedValue(el);
    if (this.filled.get(el) === value) return;
    const bid = bidOf(el);
    if (!bid) return;
    this.filled.set(el, value);
    this.emit(fill(bid, value));
  }

  private onChange(ev: Event) {
    if (!this.on || !(ev.target instanceof Element)) return;
    const el = ev.target;
    // a select's change may come from script (automation tools choose options that way); typing is trusted
    if (!ev.isTrusted && !(el instanceof HTMLSelectElement)) return;
    if (el instanceof HTMLSelectElement) {
      const bid = bidOf(el);
      const opt = el.selectedOptions[0];
      if (bid && opt) this.emit(selectOption(bid, opt.label || opt.text));
    } else if (isTextField(el)) {
      this.recordFill(el);
    }
  }

  private onKey(ev: KeyboardEvent) {
    if (!this.on || !ev.isTrusted) return;
    const el = ev.target;
    if (el instanceof Element && isTextField(el)) {
      if (ev.key === "Enter" && el instanceof HTMLInputElement) {
        this.recordFill(el); // before the submission it causes
        const bid = bidOf(el);
        if (bid) this.emit(press(bid, "Enter"));
      }
      return; // keys typed into a field scroll nothing the person meant
    }
    if (SCROLL_KEYS.has(ev.key)) this.scrollIntentAt = performance.now();
  }

  private onScroll() {
    if (!this.on) return;
    if (performance.now() - this.scrollIntentAt > SCROLL_INTENT_MS) {
      // the page scrolled itself (focus, scrollIntoView, script): not the person's action
      if (this.scrollTimer === undefined) this.scrollFrom = { x: window.scrollX, y: window.scrollY };
      return;
    }
    clearTimeout(this.scrollTimer);
    this.scrollTimer = setTimeout(() => this.flushScroll(), SCROLL_SETTLE_MS);
  }

  private flushScroll() {
    if (this.scrollTimer === undefined) return;
    clearTimeout(this.scrollTimer);
    this.scrollTimer = undefined;
    const dx = window.scrollX - this.scrollFrom.x;
    const dy = window.scrollY - this.scrollFrom.y;
    this.scrollFrom = { x: window.scrollX, y: window.scrollY };
    if (Math.round(dx) !== 0 || Math.round(dy) !== 0) this.send(scroll(dx, dy));
  }
}
