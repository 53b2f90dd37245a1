/**
 * Words that name a command in backticks (`webshepherd token`), shown as the extension's pages
 * show code: the backticks go, the command is a `<code>` element. Text only (textContent), never
 * markup.
 */

/** `text` split at its backtick pairs; an unpaired backtick stays as it is. */
export function splitCode(text: string): { code: boolean; text: string }[] {
  const out: { code: boolean; text: string }[] = [];
  const re = /`([^`\n]+)`/g;
  let at = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m.index > at) out.push({ code: false, text: text.slice(at, m.index) });
    out.push({ code: true, text: m[1]! });
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push({ code: false, text: text.slice(at) });
  return out;
}

/** `text` as nodes: each backticked command a `<code>`, the rest as `plain` makes it (text). */
export function inlineCode(text: string, plain: (t: string) => Node = (t) => document.createTextNode(t)): Node[] {
  return splitCode(text).map((p) => {
    if (!p.code) return plain(p.text);
    const c = document.createElement("code");
    c.textContent = p.text;
    return c;
  });
}
