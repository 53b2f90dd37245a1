/**
 * The overlay: a host element outside the page's own tree (left out of every
 * capture) with an open shadow root holding the panel and the outlines.
 * Collapsible, draggable (mouse or arrow keys on the header), position remembered. It shows
 * approval requests and where to decide them, never a control that decides (approval-card.ts).
 */
import { targetBid } from "../action-strings.js";
import { OVERLAY_HOST_ATTR } from "../capture/mark-elements.js";
import type { SessionView } from "../messages.js";
import { approvalCard } from "./approval-card.js";
import { drawOutlines } from "./outlines.js";
import { rewardColour } from "./reward-colour.js";
import { rewardCurvePoints } from "./reward-curve.js";
import { BAR_SEGMENTS, barLabel, checklistRows, drawable, rewardChart, streamedFeedback, treeLine } from "../session-views.js";
import { modeShown } from "../modes.js";
import { decisionLines } from "../request-card.js";
import { rewardText } from "../reward-text.js";
import { displayText } from "../display-text.js";
import { OVERLAY_CSS } from "./styles.js";
import { stepLabel } from "../steps.js";

const POS_KEY = "overlayPosition";


function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls = "", text = ""): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text) e.textContent = text;
  return e;
}

export class Overlay {
  readonly host: HTMLElement;
  private readonly root: ShadowRoot;
  private readonly panel: HTMLElement;
  private readonly body: HTMLElement;
  private readonly title: HTMLElement;
  private readonly layer: HTMLElement;
  private view: SessionView | null = null;
  private progress: Record<number, string> = {};

  constructor() {
    this.host = document.createElement("webshepherd-overlay");
    this.host.setAttribute(OVERLAY_HOST_ATTR, "");
    // out of every accessibility tree, so also out of an agent's own capture of the page
    // (BrowserGym's, browser-use's); the extension's capture prunes it by the attribute
    this.host.setAttribute("aria-hidden", "true");
    this.root = this.host.attachShadow({ mode: "open" });
    const style = h("style");
    style.textContent = OVERLAY_CSS;
    this.layer = h("div", "layer");
    this.panel = h("section", "panel");
    this.panel.dataset.testid = "ws-panel";
    this.panel.setAttribute("aria-label", "webshepherd");
    const head = h("div", "head");
    head.tabIndex = 0;
    head.setAttribute("aria-label", "webshepherd panel: drag or use arrow keys to move");
    this.title = h("h2", "", "webshepherd");
    const collapse = h("button", "", "–");
    collapse.type = "button";
    collapse.setAttribute("aria-label", "Collapse");
    collapse.setAttribute("aria-expanded", "true");
    collapse.onclick = () => {
      const collapsed = this.panel.classList.toggle("collapsed");
      collapse.setAttribute("aria-expanded", String(!collapsed));
      collapse.textContent = collapsed ? "+" : "–";
      void this.savePosition();
    };
    head.append(this.title, collapse);
    this.body = h("div", "body");
    this.panel.append(head, this.body);
    this.root.append(style, this.layer, this.panel);
    this.enableDrag(head);
    this.panel.style.right = "12px";
    this.panel.style.top = "12px";
    window.addEventListener("scroll", () => this.drawTargets(), { passive: true });
    window.addEventListener("resize", () => this.drawTargets());
  }

  mount(): void {
    if (!this.host.isConnected) document.documentElement.append(this.host);
    void this.restorePosition();
  }

  unmount(): void {
    this.host.remove();
  }

  /** Hidden while the extension takes a screenshot for an observation. */
  setHidden(hidden: boolean): void {
    this.host.style.visibility = hidden ? "hidden" : "";
  }

  update(view: SessionView | null): void {
    this.view = view;
    this.progress = view ? { ...view.progress } : {};
    if (!view) return this.unmount();
    this.mount();
    this.render();
  }

  showProgress(candidate: number, text: string): void {
    this.progress[candidate] = text;
    const box = this.root.querySelector<HTMLElement>("[data-testid=ws-feedback]");
    if (box) box.textContent = this.streaming();
  }

  /** The streamed feedback of each candidate so far, without the judgement block. */
  private streaming(): string {
    return Object.values(this.progress)
      .map((t) => displayText(streamedFeedback(t), { multiline: true }))
      .join("\n—\n");
  }

  private render(): void {
    const v = this.view!;
    this.title.textContent = v.intent ? `webshepherd · ${displayText(v.intent)}` : "webshepherd";
    const parts: HTMLElement[] = [];
    for (const req of v.approvals) parts.push(approvalCard(req));
    const { last } = drawable(v, location.href);

    if (v.mode) {
      const mode = h("div", "mode", `mode: ${modeShown(v.mode)}`);
      mode.dataset.testid = "ws-mode";
      parts.push(mode);
    }
    for (const note of v.flags) {
      const flag = h("div", "committed", displayText(note));
      flag.dataset.testid = "ws-committed";
      flag.setAttribute("role", "status");
      parts.push(flag);
    }

    if (v.tree) {
      const line = h("div", "tree", displayText(treeLine(v.tree)));
      line.dataset.testid = "ws-tree";
      line.setAttribute("role", "status");
      parts.push(line);
    }

    if (v.stalled) {
      const note = h("div", "stalled", `Stalled · ${displayText(v.stalled.detail)}`);
      note.dataset.testid = "ws-stalled";
      note.setAttribute("role", "status");
      parts.push(note);
    }

    const list = h("ul");
    list.dataset.testid = "ws-checklist";
    const rows = checklistRows(v, last);
    for (const row of rows) {
      const li = h("li");
      li.dataset.number = String(row.number);
      li.append(h("div", "", `${row.number}. ${displayText(row.title)}`));
      // a prediction (its action has not happened) is striped, never drawn as done
      const bar = h("div", row.predicted && row.probs ? "bar predicted" : "bar");
      bar.dataset.testid = "ws-bar";
      bar.setAttribute("role", "img");
      const label = barLabel(row);
      bar.setAttribute("aria-label", label);
      bar.title = label;
      if (row.probs) {
        for (const seg of BAR_SEGMENTS) {
          const part = h("div", seg.cls);
          part.style.width = `${(row.probs[seg.key] * 100).toFixed(1)}%`;
          bar.append(part);
        }
      }
      li.append(bar);
      list.append(li);
    }
    const checklist = h("div");
    checklist.append(h("h3", "", "Checklist"), list);
    if (rows.some((r) => r.probs)) {
      const legend = h("div", "legend");
      legend.dataset.testid = "ws-legend";
      for (const seg of BAR_SEGMENTS) {
        const key = h("span", "key");
        key.append(h("span", `swatch ${seg.cls}`), document.createTextNode(seg.legend));
        legend.append(key);
      }
      if (rows.some((r) => r.predicted && r.probs)) {
        const key = h("span", "key");
        key.append(h("span", "swatch predicted"), document.createTextNode("predicted, not happened yet"));
        legend.append(key);
      }
      checklist.append(legend);
    }
    parts.push(checklist);

    if (last) {
      const cands = h("ul");
      cands.dataset.testid = "ws-candidates";
      const order = [...last.scored.results].sort((a, b) => (b.reward ?? -1) - (a.reward ?? -1));
      for (const res of order) {
        const li = h("li", res.index === last.scored.best ? "cand best" : "cand");
        li.dataset.testid = "ws-candidate";
        const reward = h("span", "reward", rewardText(res.reward));
        reward.style.color = rewardColour(res.reward);
        const action = h("code", "action", displayText(last.candidates[res.index]?.action ?? `#${res.index}`));
        li.append(reward, action);
        const target = last.targets?.[res.index];
        if (target) {
          const t = h("span", "target", displayText(target));
          t.dataset.testid = "ws-candidate-target";
          li.append(t);
        }
        cands.append(li);
      }
      const box = h("div");
      box.append(h("h3", "", `Candidates · ${stepLabel(last.scored.step)}`), cands);
      const d = last.scored.decision;
      if (d.decider) {
        // who decided the step, why, and a refusal's way out
        const note = h("div", d.status === "approved" || d.status === "edited" ? "decided" : "decided refused", decisionLines(d).join("\n"));
        note.dataset.testid = "ws-decision";
        box.append(note);
      }
      parts.push(box);
    }

    const feedback = h("div", "feedback");
    feedback.dataset.testid = "ws-feedback";
    // streaming: the feedback part of each candidate's text; scored: the best candidate's
    // parsed feedback (a held step's: its request's, the held candidate being the best)
    const best = last?.scored.results.find((r) => r.index === last.scored.best);
    const held = v.approvals.filter((a) => a.reason !== "commit" && (last === null || a.step > last.scored.step)).at(-1);
    const scoredFeedback = held ? (held.card?.feedback ?? held.feedback ?? "") : (best?.feedback ?? "");
    feedback.textContent = Object.keys(this.progress).length > 0 ? this.streaming() : displayText(scoredFeedback, { multiline: true });
    const fb = h("div");
    fb.append(h("h3", "", "Feedback"), feedback);
    parts.push(fb);

    const chart = rewardChart(v.rewards);
    if (chart.kind === "value") {
      // one step: its value (a curve of one point is an empty box)
      const one = h("div", "", `Reward: ${rewardText(chart.value)} (one step so far)`);
      one.dataset.testid = "ws-reward";
      parts.push(one);
    } else if (chart.kind === "curve") {
      const NS = "http://www.w3.org/2000/svg";
      const svg = document.createElementNS(NS, "svg");
      svg.setAttribute("viewBox", "0 0 300 40");
      svg.setAttribute("preserveAspectRatio", "none");
      svg.setAttribute("role", "img");
      svg.setAttribute("aria-label", `reward curve: ${v.rewards.map(rewardText).join(", ")}`);
      svg.dataset.testid = "ws-curve";
      const line = document.createElementNS(NS, "polyline");
      line.setAttribute("points", rewardCurvePoints(v.rewards, 300, 40));
      line.setAttribute("fill", "none");
      line.setAttribute("stroke", "#0969da");
      line.setAttribute("stroke-width", "2");
      svg.append(line);
      const curve = h("div");
      curve.dataset.testid = "ws-reward";
      curve.append(h("h3", "", "Reward"), svg as unknown as HTMLElement);
      parts.push(curve);
    }
    this.body.replaceChildren(...parts);
    this.drawTargets();
  }

  private drawTargets(): void {
    const v = this.view;
    if (!v) return;
    const specs = [];
    const { last, outlined } = drawable(v, location.href);
    for (const req of outlined) {
      const bid = targetBid(req.candidate.action);
      if (bid) specs.push({ bid, colour: rewardColour(req.reward), label: `approve? ${displayText(req.candidate.action)}`, best: true });
    }
    if (last) {
      for (const res of last.scored.results) {
        const bid = targetBid(last.candidates[res.index]?.action ?? "");
        if (!bid) continue;
        const best = res.index === last.scored.best;
        specs.push({ bid, colour: rewardColour(res.reward), label: `${rewardText(res.reward)}${best ? " ★" : ""}`, best });
      }
    }
    drawOutlines(this.layer, specs);
  }

  private enableDrag(head: HTMLElement): void {
    let start: { x: number; y: number; left: number; top: number } | null = null;
    head.addEventListener("pointerdown", (ev) => {
      if ((ev.target as Element).closest("button")) return;
      const r = this.panel.getBoundingClientRect();
      start = { x: ev.clientX, y: ev.clientY, left: r.left, top: r.top };
      head.setPointerCapture(ev.pointerId);
    });
    head.addEventListener("pointermove", (ev) => {
      if (start) this.moveTo(start.left + ev.clientX - start.x, start.top + ev.clientY - start.y);
    });
    head.addEventListener("pointerup", () => {
      if (start) void this.savePosition();
      start = null;
    });
    head.addEventListener("keydown", (ev) => {
      const step = ev.shiftKey ? 50 : 10;
      const d = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] }[ev.key];
      if (!d) return;
      ev.preventDefault();
      const r = this.panel.getBoundingClientRect();
      this.moveTo(r.left + d[0]!, r.top + d[1]!);
      void this.savePosition();
    });
  }

  private moveTo(left: number, top: number): void {
    const maxX = Math.max(0, window.innerWidth - 60);
    const maxY = Math.max(0, window.innerHeight - 30);
    this.panel.style.right = "";
    this.panel.style.left = `${Math.min(maxX, Math.max(0, left))}px`;
    this.panel.style.top = `${Math.min(maxY, Math.max(0, top))}px`;
  }

  private async savePosition(): Promise<void> {
    const r = this.panel.getBoundingClientRect();
    await chrome.storage.local.set({ [POS_KEY]: { left: r.left, top: r.top, collapsed: this.panel.classList.contains("collapsed") } });
  }

  private async restorePosition(): Promise<void> {
    const got = await chrome.storage.local.get(POS_KEY);
    const pos = got[POS_KEY] as { left: number; top: number; collapsed: boolean } | undefined;
    if (!pos) return;
    this.moveTo(pos.left, pos.top);
    if (pos.collapsed !== this.panel.classList.contains("collapsed")) this.root.querySelector<HTMLButtonElement>(".head button")?.click();
  }
}
