import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { ESCAPED_RANGES, displayText, punycode } from "../src/display-text.js";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../../..");
interface Case {
  class: string;
  input: string;
  display: string;
  multiline?: boolean;
}
const VECTORS = JSON.parse(readFileSync(join(ROOT, "protocol/vectors/display.json"), "utf8")) as {
  escaped: { first: string; last: string; class: string }[];
  cases: Case[];
};
const codeOf = (u: string) => parseInt(u.slice(2), 16);

test("every display vector is shown as the Python side shows it", () => {
  assert.ok(VECTORS.cases.length > 60);
  for (const c of VECTORS.cases) {
    assert.equal(displayText(c.input, { multiline: c.multiline ?? false }), c.display, `${c.class}: ${JSON.stringify(c.input)}`);
  }
});

test("the escaped ranges are the vectors' ranges", () => {
  assert.deepEqual(
    ESCAPED_RANGES.map(([lo, hi, cls]) => [lo, hi, cls]),
    VECTORS.escaped.map((r) => [codeOf(r.first), codeOf(r.last), r.class]),
  );
});

test("exactly the ranges are escaped, each as printable ASCII", () => {
  const inside = (code: number) => ESCAPED_RANGES.some(([lo, hi]) => lo <= code && code <= hi);
  for (let code = 0; code < 0x110000; code++) {
    const ch = String.fromCodePoint(code);
    const shown = displayText(ch);
    assert.equal(shown !== ch, inside(code), `U+${code.toString(16)}`);
    if (inside(code)) assert.match(shown, /^[\x21-\x7e]+$/);
  }
});

test("every format, control and separator character the engine knows is escaped, but number signs", () => {
  const signs = new Set([0x600, 0x601, 0x602, 0x603, 0x604, 0x605, 0x6dd, 0x70f, 0x890, 0x891, 0x8e2, 0x110bd, 0x110cd]);
  const special = /^[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]$/u;
  for (let code = 0; code < 0x110000; code++) {
    const ch = String.fromCodePoint(code);
    if (!special.test(ch) || signs.has(code)) continue;
    assert.notEqual(displayText(ch), ch, `U+${code.toString(16)}`);
  }
});

test("punycode agrees with the platform's IDNA where the host is plain", () => {
  for (const host of ["pаypal.com", "bücher.de", "пример.рф", "日本語.jp", "ελληνικά.gr"]) {
    assert.equal(displayText(`https://${host}/`), new URL(`https://${host}/`).href);
  }
  assert.equal(punycode("pаypal"), "pypal-4ve");
  assert.equal(punycode("пример"), "e1afmkfd");
});
