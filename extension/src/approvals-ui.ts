/**
 * The pending approvals with Approve / Reject / Edit, for the extension's own pages (side
 * panel, popup): pages no web page can script and page automation does not see, so a
 * decision made here is a person's. Each card shows what a person needs to judge the step
 * (card-view.ts: the target, where it leads, what it types, why it waits, thought, feedback,
 * the other candidates) and the target cut out of the step's screenshot on a canvas. Every
 * untrusted string goes through `displayText` into `textContent`, never `innerHTML`. Keys on a
 * focused card: `a`, `r`, `e`; Enter sends an edit. Lists again whenever the worker says the
 * approvals changed.
 */
import { cardLines, cropOf } from "./card-view.js";
import { allowOriginQuestion } from "./modes.js";
import { decisionLines, originToAllow, requestLines, timeLeft } from "./request-card.js";
import { rewardText } from "./reward-text.js";
import { displayText } from "./display-text.js";
import { inlineCode } from "./inline-code.js";
import { HOW_TO_PAIR, sendToWorker, type Decision, type PendingApproval, type ToPages } from "./messages.js";
import type { ApprovalRequest } from "./protocol.gen.js";
import { clockTime, decidedOutcome } from "./session-views.js";
import { connectionWords } from "./status-words.js";
import { stepLabel, stepNumber } from "./steps.js";
import { wrappedUrl } from "./url-wrap.js";

const CROP_WIDTH = 320; // the most the cut-out takes, in CSS pixels
const CROP_HEIGHT = 200;
const MIMES = new Set(["image/png", "image/jpeg", "image/webp"]);

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Record<string, unknown> = {}, ...kids: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  Object.assign(e, props);
  e.append(...kids);
  return e;
}

/** The target cut out of the step's screenshot, outlined, on a canvas (null: nothing to cut). */
function cropCanvas(req: ApprovalRequest): HTMLCanvasElement | null {
  const shot = req.card?.screenshot;
  const box = req.card?.target?.box;
  if (!shot?.data || !box || !MIMES.has(shot.mime ?? "image/png")) return null;
  const canvas = el("canvas", { className: "crop", width: 1, height: 1 });
  canvas.dataset.testid = "ws-card-crop";
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", "The target on the page");
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = Uint8Array.from(atob(shot.data), (c) => c.charCodeAt(0)) as Uint8Array<ArrayBuffer>;
  } catch {
    return null;
  }
  void createImageBitmap(new Blob([bytes], { type: shot.mime ?? "image/png" }))
    .then((img) => {
      const crop = cropOf(box, img.width, img.height);
      if (!crop) {
        canvas.remove();
        return;
      }
      const scale = Math.min(CROP_WIDTH / crop.sw, CROP_HEIGHT / crop.sh, 2);
      canvas.width = Math.max(1, Math.round(crop.sw * scale));
      canvas.height = Math.max(1, Math.round(crop.sh * scale));
      const g = canvas.getContext("2d")!;
      g.drawImage(img, crop.sx, crop.sy, crop.sw, crop.sh, 0, 0, canvas.width, canvas.height);
      const [x, y, w, h] = crop.target.map((v) => v * scale) as [number, number, number, number];
      g.strokeStyle = "#ffc800";
      g.lineWidth = 2;
      g.strokeRect(x - 1, y - 1, w + 2, h + 2);
      canvas.dataset.drawn = "1";
    })
    .catch(() => canvas.remove());
  return canvas;
}

/** The card's fields as a definition list (textContent only). */
function cardFields(req: ApprovalRequest): HTMLElement {
  const c = cardLines(req);
  const dl = el("dl", { className: "card" });
  dl.dataset.testid = "ws-card";
  const row = (name: string, testid: string, value: Node | string) => {
    const dd = el("dd", {}, value);
    dd.dataset.testid = testid;
    dl.append(el("dt", {}, name), dd);
  };
  if (c.target) row("Target", "ws-card-target", c.target);
  if (c.destination) row("Leads to", "ws-card-destination", wrappedUrl(c.destination));
  if (c.typed) row("Types", "ws-card-typed", c.typed);
  row("Why it waits", "ws-card-why", el("ul", {}, ...c.why.map((w) => el("li", {}, w))));
  row("Thought", "ws-card-thought", c.thought || "—");
  row("Feedback", "ws-card-feedback", c.feedback || "—");
  if (c.predicts.length > 0) row("Predicted", "ws-card-predicts", el("ul", {}, ...c.predicts.map((p) => el("li", {}, p))));
  if (c.others.length > 0) row("Others", "ws-card-others", el("ul", {}, ...c.others.map((o) => el("li", {}, o))));
  return dl;
}

/** A paused request's card: in the task's words first (what was clicked, what it sends, the
 * page's amounts, why it waits, the judge's view, the time left, what each answer does), then
 * exactly what would be sent and what caused it. */
function requestFields(req: ApprovalRequest, crop: HTMLCanvasElement | null): HTMLElement | null {
  const r = requestLines(req);
  if (!r) return null;
  const dl = el("dl", { className: "card" });
  dl.dataset.testid = "ws-request";
  const row = (name: string, testid: string, ...value: (Node | string)[]) => {
    const dd = el("dd", {}, ...value);
    dd.dataset.testid = testid;
    dl.append(el("dt", {}, name), dd);
    return dd;
  };
  const list = (items: string[]) => el("ul", {}, ...items.map((f) => el("li", {}, f)));
  if (r.clicked) row("Clicked", "ws-request-clicked", r.clicked, ...(crop ? [el("br"), crop] : []));
  row("Sends", "ws-request-fields", r.fields.length > 0 ? list(r.fields) : "—");
  if (r.amounts.length > 0) row("The page says", "ws-request-amounts", list(r.amounts));
  if (r.why) row("Why it waits", "ws-request-why", r.why);
  if (r.judge) row("The judge", "ws-request-judge", r.judge);
  if (r.expiresAt !== null) {
    const at = r.expiresAt;
    const left = row("Time left", "ws-request-left", timeLeft(at, Date.now() / 1000));
    const tick = setInterval(() => {
      if (!left.isConnected) clearInterval(tick);
      else left.textContent = timeLeft(at, Date.now() / 1000);
    }, 1000);
  }
  if (r.approve) row("Approve", "ws-request-approve", r.approve);
  if (r.reject) row("Reject", "ws-request-reject", r.reject);
  row("Method", "ws-request-method", r.method);
  row("URL", "ws-request-url", wrappedUrl(r.url));
  row("Body", "ws-request-body", r.body);
  row("Target origin", "ws-request-origin", wrappedUrl(r.origin));
  row("Caused by", "ws-request-trigger", r.trigger);
  if (r.page) row("From page", "ws-request-page", wrappedUrl(r.page));
  return dl;
}

/** The paused requests decided lately, newest first: what, who decided, why, the way out. */
async function recentDecisions(): Promise<HTMLElement> {
  const recent = await sendToWorker({ kind: "commits.recent" });
  const box = el("section", { className: "recent" });
  box.dataset.testid = "ws-recent";
  if (recent.length === 0) return box;
  box.append(el("h2", {}, "Requests decided"));
  for (const d of [...recent].reverse()) {
    const item = el("div", { className: "decided" });
    item.dataset.testid = "ws-decided";
    item.dataset.status = d.decision.status;
    item.dataset.decider = d.decision.decider ?? "";
    const end = decidedOutcome(d);
    item.dataset.outcome = end.outcome;
    const time = el("time", { dateTime: new Date(d.at).toISOString() }, clockTime(d.at));
    const head = el("div", { className: "outcome" }, el("strong", {}, end.words), " · ", time);
    head.dataset.testid = "ws-decided-outcome";
    item.append(
      head,
      el("code", {}, displayText(`${d.request.method} `), wrappedUrl(displayText(d.request.url))),
      ...decisionLines(d.decision, d.flagged).map((line) => el("div", {}, line)),
    );
    box.append(item);
  }
  return box;
}

export function mountApprovals(root: HTMLElement, via: "panel" | "popup"): void {
  const status = el("p", { className: "status" });
  status.setAttribute("role", "status");
  const list = el("div", { className: "approvals" });
  list.dataset.testid = "ws-approvals";
  const unpaired = el("p", { className: "unpaired", hidden: true }, HOW_TO_PAIR);
  unpaired.dataset.testid = "ws-unpaired";
  const recent = el("div");
  root.append(unpaired, list, status, recent);
  let paired = false; // only a paired browser gets decision controls

  /** The paused requests whose "allow this site" question is open, kept across redraws. */
  const allowing = new Set<string>();
  const decide = async (requestId: string, decision: Decision, action: string | null, allowOrigin = false) => {
    allowing.delete(requestId);
    const r = await sendToWorker({ kind: "approval.decide", requestId, decision, action, via, allowOrigin });
    status.textContent = r.ok ? "" : displayText(r.error ?? "failed");
    await render();
  };

  /** "Allow this site…": approves the request and allows its origin for the rest of the
   * session, after asking in the card as loosening a mode does (mode-control.ts), naming the
   * session and the origin; Escape or "Keep asking" backs out. (No "Approve" in these buttons'
   * names: the card's own Approve stays the one button of that name.) */
  const allowOriginControl = (req: ApprovalRequest, intent: string, origin: string): HTMLElement[] => {
    const shown = displayText(origin);
    const open = el("button", { type: "button", title: `Approve it and let later writes to ${shown} run, flagged` }, "Allow this site…");
    open.dataset.testid = "ws-allow-origin";
    open.onclick = () => {
      allowing.add(req.request_id);
      void render();
    };
    if (!allowing.has(req.request_id)) return [open];
    const session = { sessionId: displayText(req.session_id), intent: displayText(intent) };
    const yes = el("button", { type: "button" }, `Yes, allow ${shown}`);
    const no = el("button", { type: "button" }, "Keep asking");
    yes.dataset.testid = "ws-confirm-allow";
    no.dataset.testid = "ws-keep-asking";
    yes.onclick = () => void decide(req.request_id, "approve", null, true);
    no.onclick = () => {
      allowing.delete(req.request_id);
      void render();
    };
    const box = el("div", { className: "confirm" }, el("p", {}, allowOriginQuestion(session, shown)), el("div", { className: "buttons" }, yes, no));
    box.dataset.testid = "ws-confirm-origin";
    box.setAttribute("role", "alertdialog");
    box.onkeydown = (ev) => {
      ev.stopPropagation(); // not the card's a / r
      if (ev.key === "Escape") no.click();
    };
    queueMicrotask(() => no.focus());
    return [box];
  };

  const card = ({ request: req, intent }: PendingApproval): HTMLElement => {
    const c = el("section", { className: "approval", tabIndex: 0 });
    c.dataset.testid = "ws-decide";
    c.dataset.requestId = req.request_id;
    c.setAttribute("aria-label", `Approval needed: ${stepLabel(req.step)}`);
    const edit = el("input", { value: displayText(req.candidate.action), hidden: true });
    edit.setAttribute("aria-label", "Edited action");
    const approve = el("button", { type: "button", title: "Approve (A)" }, "Approve");
    const reject = el("button", { type: "button", title: "Reject (R)" }, "Reject");
    const editBtn = el("button", { type: "button", title: "Edit (E)" }, "Edit");
    approve.onclick = () => void decide(req.request_id, "approve", null);
    reject.onclick = () => void decide(req.request_id, "reject", null);
    editBtn.onclick = () => {
      if (edit.hidden) {
        edit.hidden = false;
        edit.focus();
        editBtn.textContent = "Send edit";
      } else {
        void decide(req.request_id, "edit", edit.value);
      }
    };
    edit.onkeydown = (ev) => {
      ev.stopPropagation();
      if (ev.key === "Enter") void decide(req.request_id, "edit", edit.value);
      if (ev.key === "Escape") edit.hidden = true;
    };
    const crop = cropCanvas(req);
    const commit = requestFields(req, crop); // a paused request: approved or rejected as it is, never edited
    c.onkeydown = (ev) => {
      if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
      const k = ev.key.toLowerCase();
      if (k === "a") approve.click();
      else if (k === "r") reject.click();
      else if (k === "e" && !commit) editBtn.click();
      else return;
      ev.preventDefault();
    };
    if (!paired) c.onkeydown = null;
    if (commit) {
      const origin = originToAllow(req);
      const allow = origin ? allowOriginControl(req, intent, origin) : [];
      const headline = el("h3", { className: "headline" }, requestLines(req)!.headline);
      headline.dataset.testid = "ws-headline";
      c.dataset.reason = "commit";
      c.append(
        headline,
        el("p", { className: "intent" }, displayText(intent, { multiline: true })),
        commit,
        ...(paired ? [el("div", { className: "buttons" }, approve, reject), ...allow] : []),
      );
      return c;
    }
    const reward = rewardText(req.reward);
    const headline = req.card?.headline ? [el("p", { className: "headline" }, displayText(req.card.headline))] : [];
    c.append(
      ...headline,
      el("h3", {}, `Step ${stepNumber(req.step)}: ${displayText(req.reason.replace(/_/g, " "))}`),
      el("p", { className: "intent" }, displayText(intent, { multiline: true })),
      el("code", {}, displayText(req.candidate.action)),
      el("div", {}, `reward ${reward}`),
      ...(crop ? [crop] : []),
      cardFields(req),
      ...(paired ? [edit, el("div", { className: "buttons" }, approve, reject, editBtn)] : []),
    );
    return c;
  };

  const render = async () => {
    const pairing = await sendToWorker({ kind: "pairing.state" });
    paired = pairing.paired;
    // not connected (no token, refused, unreachable): that is what to fix first, not pairing;
    // the popup says it in its own status line already
    const linked = pairing.link.conn === "connected";
    // the popup's own status lines say both already (said twice, it read as two problems)
    unpaired.hidden = paired || via === "popup";
    unpaired.replaceChildren(...inlineCode(linked ? `${pairing.note ? `${displayText(pairing.note)} ` : ""}${HOW_TO_PAIR}` : displayText(connectionWords(pairing.link))));
    const pending = await sendToWorker({ kind: "approvals.list" });
    for (const id of [...allowing]) if (!pending.some((p) => p.request.request_id === id)) allowing.delete(id);
    list.replaceChildren(...(pending.length > 0 ? pending.map(card) : [el("p", {}, "No approval is waiting.")]));
    recent.replaceChildren(await recentDecisions());
  };

  chrome.runtime.onMessage.addListener((msg: ToPages) => {
    if (msg.kind === "approvals.changed") void render();
  });
  void render();
}
