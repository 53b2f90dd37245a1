/**
 * Python's repr(), str.strip() and float formatting, re-implemented for the
 * values that BrowserGym's flattener prints (strings, bools, numbers, None,
 * lists and dicts of those). Output must match CPython 3 byte for byte.
 */
import { unassignedInUnicode14 } from "./unicode14.js";

/**
 * Code points that CPython's str.isprintable() rejects (repr escapes them),
 * by the JS engine's Unicode data; see unicode14.ts for the rest.
 */
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

function isPrintable(ch: string, cp: number): boolean {
  return ch === " " || !(NON_PRINTABLE.test(ch) || unassignedInUnicode14(cp));
}

function hex(cp: number, width: number): string {
  return cp.toString(16).padStart(width, "0");
}

/** Printable ASCII other than the quotes and the backslash: repr() only adds quotes. */
const PLAIN = /^[ !#-&(-[\]-~]*$/;

/** repr() of a Python str. */
export function reprString(s: string): string {
  if (PLAIN.test(s)) return "'" + s + "'";
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === quote || ch === "\\") out += "\\" + ch;
    else if (ch === "\t") out += "\\t";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (cp < 0x20 || cp === 0x7f) out += "\\x" + hex(cp, 2);
    else if (cp < 0x7f) out += ch;
    else if (!isPrintable(ch, cp)) {
      if (cp <= 0xff) out += "\\x" + hex(cp, 2);
      else if (cp <= 0xffff) out += "\\u" + hex(cp, 4);
      else out += "\\U" + hex(cp, 8);
    } else out += ch;
  }
  return out + quote;
}

/**
 * repr() of a Python float. JS and CPython both print the shortest string that
 * round-trips; only the layout differs (Python switches to exponent notation
 * when the decimal exponent is < -4 or >= 16 and always shows ".0" or "e±XX").
 */
export function reprFloat(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const [mant, expStr] = Math.abs(x).toExponential().split("e") as [string, string];
  const digits = mant.replace(".", "");
  const exp = Number(expStr); // value = d.ddd * 10^exp
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? digits[0] + "." + digits.slice(1) : digits;
    const e = (exp < 0 ? "-" : "+") + String(Math.abs(exp)).padStart(2, "0");
    return `${sign}${m}e${e}`;
  }
  if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
  const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, "0");
  const frac = digits.slice(exp + 1) || "0";
  return `${sign}${intPart}.${frac}`;
}

/** repr() of a Python int given as a JS number (integral, any magnitude). */
export function reprInt(x: number): string {
  return BigInt(x).toString();
}

/**
 * repr() of a JSON-ish value as Python would print it after json.load.
 * Integral numbers are taken as Python ints (as Chrome's DevTools protocol
 * serialises integral doubles without a fraction), others as floats.
 */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (typeof value === "string") return reprString(value);
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "number") return Number.isInteger(value) ? reprInt(value) : reprFloat(value);
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return "[" + value.map(pyRepr).join(", ") + "]";
  if (typeof value === "object") {
    const items = Object.entries(value as Record<string, unknown>);
    return "{" + items.map(([k, v]) => `${reprString(k)}: ${pyRepr(v)}`).join(", ") + "}";
  }
  throw new TypeError(`pyRepr: unsupported type ${typeof value}`);
}

/** Characters for which CPython's str.isspace() is true (what strip() removes). */
const PY_WHITESPACE = new Set(
  Array.from(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004" +
      "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000",
  ),
);

/** Python's str.strip() with no argument (differs from String.trim on U+FEFF, U+0085, U+001C-1F). */
export function pyStrip(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && PY_WHITESPACE.has(s[start]!)) start++;
  while (end > start && PY_WHITESPACE.has(s[end - 1]!)) end--;
  return s.slice(start, end);
}

/** Python's truthiness of a JSON-ish value (bool(x)). */
export function pyTruthy(value: unknown): boolean {
  if (value === null || value === undefined) return false;
  if (typeof value === "string") return value.length > 0;
  if (typeof value === "number") return value !== 0; // NaN is truthy in Python too
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value as object).length > 0;
  return Boolean(value);
}

/**
 * Python's format(x, f".{decimals}f"): exact decimal value of the double,
 * rounded half to even (JS toFixed rounds ties away from zero).
 */
export function formatFixed(x: number, decimals: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  const negative = x < 0 || Object.is(x, -0);
  // |x| = mantissa * 2^exp exactly
  const [mantissa, exp] = decompose(Math.abs(x));
  // scaled = |x| * 10^decimals as the fraction num / den
  let num = mantissa * 10n ** BigInt(decimals);
  let den = 1n;
  if (exp >= 0) num <<= BigInt(exp);
  else den <<= BigInt(-exp);
  let q = num / den;
  const twiceRem = (num % den) * 2n;
  if (twiceRem > den || (twiceRem === den && q % 2n === 1n)) q += 1n;
  let digits = q.toString().padStart(decimals + 1, "0");
  if (decimals > 0) digits = digits.slice(0, -decimals) + "." + digits.slice(-decimals);
  return (negative ? "-" : "") + digits;
}

/** Split a finite non-negative double into an integer mantissa and a power of two. */
function decompose(x: number): [bigint, number] {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const biasedExp = (hi >>> 20) & 0x7ff;
  let mantissa = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  if (biasedExp === 0) return [mantissa, -1074];
  mantissa |= 1n << 52n;
  return [mantissa, biasedExp - 1075];
}
