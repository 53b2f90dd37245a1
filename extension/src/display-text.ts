/**
 * Untrusted text made safe to show: the extension's twin of protocol/terminal_text.py
 * (`terminal_safe`), both held to protocol/vectors/display.json. Every control, C1, bidi,
 * invisible (default-ignorable), tag and variation-selector character becomes a visible escape
 * (`\x1b`, `\u202e`, `\U000e0041`), and a URL's (or a `goto('…')` argument's) non-ASCII host
 * becomes punycode, so `fill('7', '\u202e91\u202c')` cannot read `fill('7', '19')` and a
 * Cyrillic `pаypal.com` reads `xn--pypal-4ve.com`. Put the result in `textContent`, never in
 * `innerHTML`.
 */

/** [first, last, class] of every code point shown as an escape (the vectors' `escaped`). */
export const ESCAPED_RANGES: ReadonlyArray<readonly [number, number, string]> = [
  [0x0000, 0x001f, "C0 control"],
  [0x007f, 0x007f, "C0 control"],
  [0x0080, 0x009f, "C1 control"],
  [0x00ad, 0x00ad, "soft hyphen"],
  [0x034f, 0x034f, "combining grapheme joiner"],
  [0x061c, 0x061c, "bidi control"],
  [0x115f, 0x1160, "Hangul filler"],
  [0x17b4, 0x17b5, "Khmer inherent vowel"],
  [0x180b, 0x180f, "Mongolian variation selector / vowel separator"],
  [0x200b, 0x200d, "zero-width"],
  [0x200e, 0x200f, "bidi control"],
  [0x2028, 0x2029, "line / paragraph separator"],
  [0x202a, 0x202e, "bidi control"],
  [0x2060, 0x2065, "zero-width"],
  [0x2066, 0x2069, "bidi control"],
  [0x206a, 0x206f, "deprecated format"],
  [0x2800, 0x2800, "blank lookalike"],
  [0x3164, 0x3164, "Hangul filler"],
  [0xd800, 0xdfff, "lone surrogate"],
  [0xfe00, 0xfe0f, "variation selector"],
  [0xfeff, 0xfeff, "zero-width"],
  [0xffa0, 0xffa0, "Hangul filler"],
  [0xfff0, 0xfff8, "default-ignorable (unassigned)"],
  [0xfff9, 0xfffb, "interlinear annotation"],
  [0x13430, 0x1343f, "Egyptian hieroglyph format control"],
  [0x1bca0, 0x1bca3, "shorthand format control"],
  [0x1d173, 0x1d17a, "musical format control"],
  [0xe0000, 0xe007f, "tag"],
  [0xe0080, 0xe00ff, "default-ignorable (unassigned)"],
  [0xe0100, 0xe01ef, "variation selector"],
  [0xe01f0, 0xe0fff, "default-ignorable (unassigned)"],
];

const hex = (code: number, width: number) => code.toString(16).padStart(width, "0");
const visible = (code: number) =>
  code < 0x100 ? `\\x${hex(code, 2)}` : code < 0x10000 ? `\\u${hex(code, 4)}` : `\\U${hex(code, 8)}`;

const CLASS = ESCAPED_RANGES.map(([lo, hi]) =>
  lo === hi ? `\\u{${lo.toString(16)}}` : `\\u{${lo.toString(16)}}-\\u{${hi.toString(16)}}`,
).join("");
const UNSAFE = new RegExp(`[${CLASS}]`, "gu");
const UNSAFE_MULTILINE = new RegExp(`(?![\\n\\t])[${CLASS}]`, "gu");

// The same spelled-out classes as the Python side (no \s, no \b).
const STOP = "\\x00-\\x20/?#'\"<>\\\\`(){}\\[\\],;|";
const URL_AUTHORITY = new RegExp(`(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*://)([^${STOP}]*)`, "gu");
const GOTO = /(goto\([ \t\r\n]*)(['"])((?:(?!\2)[^\\]|\\.)*)\2/gsu;
const HOST_END = new RegExp(`[${STOP}:@]`, "u");
const DOTS = /[.\u3002\uff0e\uff61]/u;
const ASCII = /^[\x00-\x7f]*$/;

// RFC 3492's parameters for IDNA.
const BASE = 36;
const TMIN = 1;
const TMAX = 26;
const SKEW = 38;
const DAMP = 700;

function adapt(delta: number, points: number, first: boolean): number {
  let d = first ? Math.floor(delta / DAMP) : Math.floor(delta / 2);
  d += Math.floor(d / points);
  let k = 0;
  while (d > ((BASE - TMIN) * TMAX) >> 1) {
    d = Math.floor(d / (BASE - TMIN));
    k += BASE;
  }
  return k + Math.floor(((BASE - TMIN + 1) * d) / (d + SKEW));
}

const digit = (d: number) => String.fromCharCode(d < 26 ? 0x61 + d : 0x30 + d - 26);

/** RFC 3492 punycode of `label` (the part after `xn--`). */
export function punycode(label: string): string {
  const codes = Array.from(label, (c) => c.codePointAt(0)!);
  let out = codes
    .filter((c) => c < 0x80)
    .map((c) => String.fromCharCode(c))
    .join("");
  const basic = out.length;
  if (basic > 0) out += "-";
  let n = 0x80;
  let delta = 0;
  let bias = 72;
  let handled = basic;
  while (handled < codes.length) {
    const m = Math.min(...codes.filter((c) => c >= n));
    delta += (m - n) * (handled + 1);
    n = m;
    for (const c of codes) {
      if (c < n) delta++;
      if (c !== n) continue;
      let q = delta;
      for (let k = BASE; ; k += BASE) {
        const t = k <= bias ? TMIN : k >= bias + TMAX ? TMAX : k - bias;
        if (q < t) break;
        out += digit(t + ((q - t) % (BASE - t)));
        q = Math.floor((q - t) / (BASE - t));
      }
      out += digit(q);
      bias = adapt(delta, handled + 1, handled === basic);
      delta = 0;
      handled++;
    }
    delta++;
    n++;
  }
  return out;
}

function punycodeHost(host: string): string {
  if (ASCII.test(host)) return host;
  return host
    .split(DOTS)
    .map((label) => (ASCII.test(label) ? label : `xn--${punycode(label.toLowerCase())}`))
    .join(".");
}

function punycodeAuthority(authority: string): string {
  const at = authority.lastIndexOf("@");
  const userinfo = authority.slice(0, at + 1);
  const hostport = authority.slice(at + 1);
  const colon = hostport.indexOf(":");
  if (colon < 0) return userinfo + punycodeHost(hostport);
  return userinfo + punycodeHost(hostport.slice(0, colon)) + hostport.slice(colon);
}

/** `text` with the host of every URL in it, and of a `goto('…')` argument, as punycode
 * where it is not ASCII; nothing else changes. */
export function punycodeHosts(text: string): string {
  if (ASCII.test(text)) return text;
  const gone = text.replace(GOTO, (_m, head: string, quote: string, url: string) => {
    if (!url.includes("://")) {
      const end = HOST_END.exec(url);
      const cut = end ? end.index : url.length;
      url = punycodeHost(url.slice(0, cut)) + url.slice(cut);
    }
    return `${head}${quote}${url}${quote}`;
  });
  return gone.replace(URL_AUTHORITY, (_m, scheme: string, authority: string) => scheme + punycodeAuthority(authority));
}

/** `text` made safe to show (see the module's comment); `multiline` keeps newlines and tabs
 * (elsewhere they are escaped too). */
export function displayText(text: string, options: { multiline?: boolean } = {}): string {
  const pattern = options.multiline ? UNSAFE_MULTILINE : UNSAFE;
  return punycodeHosts(text).replace(pattern, (c) => visible(c.codePointAt(0)!));
}
