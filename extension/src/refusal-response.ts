/**
 * How a refused paused request ends, and what its page is told (issue 51): the page stays
 * usable. A document (a form's POST, a navigation, a frame's) is failed as `Aborted`: Chromium
 * drops a navigation that ends so and keeps the document where it was, with the form's typed
 * values, where `BlockedByClient` commits its error page (`chrome-error://`) — the same as the
 * Python gate (integrations/commit_gate.py). Any other request (fetch, XHR, an image) fails as
 * `BlockedByClient`: a network error the page's script can handle. Either way nothing is sent,
 * and the tab's overlay says who refused it and why (`refused` to its content script).
 */
import type { CdpSend } from "./capture/cdp.js";
import { displayText } from "./display-text.js";
import { sendToTab } from "./messages.js";
import { decisionLines } from "./request-card.js";
import type { DecisionInfo, HeldRequest } from "./protocol.gen.js";

/** Why a request was refused when no decision came back (nobody to ask, an error). */
export const UNASKED = "the webshepherd extension could not ask the daemon (not connected, or asking failed); a request that commits is never sent unasked";

/** The error a refused request fails with: `Aborted` for a document, so its page stays. */
export function refusalReason(resourceType: string | undefined): "Aborted" | "BlockedByClient" {
  return resourceType === "Document" ? "Aborted" : "BlockedByClient";
}

/** What the overlay says of a refusal: what was refused, then who refused it and why (the
 * panel's decision lines); `decision` null: nobody was asked. Raw page text is escaped by
 * decisionLines; the content script shows it through displayText too. */
export function refusalNotice(request: Pick<HeldRequest, "method" | "url" | "kind"> | null, decision: DecisionInfo | null): string {
  const what = request ? displayText(`${request.kind === "download" ? "download" : request.method} ${request.url}`) : "a request";
  const d = decision ?? { status: "rejected", by: "webshepherd extension", note: UNASKED };
  const lines = d.status === "approved" ? ["refused: the daemon's approval named another request"] : decisionLines(d);
  return [`webshepherd did not send ${what}`, ...lines].join("\n");
}

/** Fails the paused request `requestId` as its kind asks, and tells the tab's overlay. */
export async function refuse(
  send: CdpSend,
  tabId: number,
  requestId: string,
  resourceType: string | undefined,
  request: HeldRequest | null,
  decision: DecisionInfo | null,
): Promise<void> {
  await send("Fetch.failRequest", { requestId, errorReason: refusalReason(resourceType) });
  sendToTab(tabId, { kind: "refused", text: refusalNotice(request, decision) });
}
