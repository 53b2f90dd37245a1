/**
 * Where a URL may wrap in the extension's narrow pages (the popup, the side panel): after `/`,
 * `?`, `&` and `.` (a run of them, such as `://`, stays whole), never inside `host:port`: the
 * host of a numeric address and the port go on one line. The pieces are put into the page as
 * text nodes with `<wbr>` between them (never as HTML), with CSS `overflow-wrap` only for a
 * piece longer than a line.
 */

const PIECE = /[^/?&.]*[/?&.]+|[^/?&.]+$/g;

/** The pieces of `text` a line may end after, in order; joined they are `text` again. */
export function urlPieces(text: string): string[] {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/is.exec(text);
  if (!m) return text.match(PIECE) ?? [];
  const [, scheme, authority, rest] = m as unknown as [string, string, string, string];
  const host = authority.replace(/:\d*$/, "").replace(/^.*@/, "");
  // a name may wrap after its dots; an IP address (v4, or [v6]) and its port never do
  const numeric = /^[\d.]+$/.test(host) || host.startsWith("[");
  const hostPieces = numeric || authority === "" ? [authority] : (authority.match(/[^.]*\.+|[^.]+$/g) ?? []);
  const restPieces = rest.match(PIECE) ?? [];
  // the first path piece ("/", or "/v1/") stays with the host's last piece
  const tail = restPieces.length > 0 && rest.startsWith("/") && hostPieces.length > 0 ? [hostPieces.pop()! + restPieces.shift()!] : [];
  return [scheme, ...hostPieces, ...tail, ...restPieces].filter((p) => p !== "");
}

/** `text` as text nodes with a `<wbr>` at each point `urlPieces` allows (no HTML parsed). */
export function wrappedUrl(text: string, doc: Document = document): DocumentFragment {
  const frag = doc.createDocumentFragment();
  urlPieces(text).forEach((piece, i) => {
    if (i > 0) frag.append(doc.createElement("wbr"));
    frag.append(doc.createTextNode(piece));
  });
  return frag;
}

/** `text` with its first `url` wrapped as `wrappedUrl` does (the rest as plain text nodes). */
export function textWithUrl(text: string, url: string, doc: Document = document): DocumentFragment {
  const frag = doc.createDocumentFragment();
  const at = url ? text.indexOf(url) : -1;
  if (at < 0) {
    frag.append(doc.createTextNode(text));
    return frag;
  }
  const span = doc.createElement("span");
  span.className = "url";
  span.append(wrappedUrl(url, doc));
  frag.append(doc.createTextNode(text.slice(0, at)), span, doc.createTextNode(text.slice(at + url.length)));
  return frag;
}
