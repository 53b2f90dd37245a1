/**
 * The pending approvals with Approve / Reject / Edit, for the extension's own pages (side
 * panel, popup): pages no web page can script and page automation does not see, so a
 * decision made here is a person's. Keys on a focused card: `a`, `r`, `e`; Enter sends an
 * edit. Lists again whenever the worker says the approvals changed.
 */
import { sendToWorker, type Decision, type PendingApproval, type ToPages } from "./messages.js";
import { stepLabel, stepNumber } from "./steps.js";

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Record<string, unknown> = {}, ...kids: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  Object.assign(e, props);
  e.append(...kids);
  return e;
}

export function mountApprovals(root: HTMLElement, via: "panel" | "popup"): void {
  const status = el("p", { className: "status" });
  status.setAttribute("role", "status");
  const list = el("div", { className: "approvals" });
  list.dataset.testid = "ws-approvals";
  root.append(list, status);

  const decide = async (requestId: string, decision: Decision, action: string | null) => {
    const r = await sendToWorker({ kind: "approval.decide", requestId, decision, action, via });
    status.textContent = r.ok ? "" : (r.error ?? "failed");
    await render();
  };

  const card = ({ request: req, intent }: PendingApproval): HTMLElement => {
    const c = el("section", { className: "approval", tabIndex: 0 });
    c.dataset.testid = "ws-decide";
    c.dataset.requestId = req.request_id;
    c.setAttribute("aria-label", `Approval needed: ${stepLabel(req.step)}`);
    const edit = el("input", { value: req.candidate.action, hidden: true });
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
    c.onkeydown = (ev) => {
      if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
      const k = ev.key.toLowerCase();
      if (k === "a") approve.click();
      else if (k === "r") reject.click();
      else if (k === "e") editBtn.click();
      else return;
      ev.preventDefault();
    };
    const reward = req.reward === null || req.reward === undefined ? "n/a" : req.reward.toFixed(2);
    c.append(
      el("h3", {}, `Step ${stepNumber(req.step)}: ${req.reason.replace(/_/g, " ")}`),
      el("p", { className: "intent" }, intent),
      el("code", {}, req.candidate.action),
      el("div", {}, `reward ${reward}`),
      el("div", { className: "feedback" }, req.feedback ?? ""),
      edit,
      el("div", { className: "buttons" }, approve, reject, editBtn),
    );
    return c;
  };

  const render = async () => {
    const pending = await sendToWorker({ kind: "approvals.list" });
    list.replaceChildren(...(pending.length > 0 ? pending.map(card) : [el("p", {}, "No approval is waiting.")]));
  };

  chrome.runtime.onMessage.addListener((msg: ToPages) => {
    if (msg.kind === "approvals.changed") void render();
  });
  void render();
}
