/**
 * The two links' words, the same on every page of the extension. The token connects this
 * browser to the daemon ("Connect to the daemon": connected / no token / token refused / not
 * reachable); a person's one-time code pairs it ("Pair as a person": paired as NAME / not
 * paired), and only a paired browser decides approvals.
 */
import type { LinkState, PairingState } from "./messages.js";

/** The options page's two sections, named the same wherever the words point to them. */
export const CONNECT_SECTION = "Connect to the daemon";
export const PAIR_SECTION = "Pair as a person";

/** The connection to the daemon in one sentence (`detail`: the daemon's or the socket's reason). */
export function connectionWords(link: LinkState): string {
  const why = link.detail ? ` (${link.detail})` : "";
  if (!link.token) return `No token: run \`webshepherd token\` and paste it under “${CONNECT_SECTION}” in the options.`;
  switch (link.conn) {
    case "connected":
      return `Connected to the daemon at ${link.url}.`;
    case "connecting":
      return `Connecting to the daemon at ${link.url}…`;
    case "unauthorized":
      return `Token refused by the daemon at ${link.url}${why}: paste what \`webshepherd token\` prints now under “${CONNECT_SECTION}” in the options.`;
    case "disconnected":
      return `The daemon at ${link.url} is not reachable${why}: start it with \`webshepherd serve\`.`;
  }
}

/** Whether a person paired this browser, in one sentence (nothing to say while not connected). */
export function personWords(p: PairingState): string {
  if (p.paired) return `Paired as extension:${p.name ?? "?"}: this browser decides approvals.`;
  if (p.link.conn !== "connected") return "";
  return `Not paired: this browser decides no approvals; “${PAIR_SECTION}” in the options takes the code of \`webshepherd pair extension\`.`;
}
