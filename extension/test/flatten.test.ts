import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import { flattenAxtreeToStr } from "../src/axtree/flatten.js";
import type { AXTree, ExtraProperties } from "../src/axtree/types.js";

/** The repo root: walk up from this file (source or compiled) to the folder holding extension/. */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!readdirSync(dir).includes("extension")) {
    const up = dirname(dir);
    if (up === dir) throw new Error("repo root not found");
    dir = up;
  }
  return dir;
}

const GOLDEN = resolve(repoRoot(), "tests/fixtures/data/axtree-golden");
const pages = readdirSync(GOLDEN)
  .filter((f) => f.endsWith(".axtree.json"))
  .map((f) => f.slice(0, -".axtree.json".length))
  .sort();

const read = (name: string) => readFileSync(join(GOLDEN, name), "utf8");

describe("golden BrowserGym outputs", () => {
  test("fixtures are present", () => assert.ok(pages.length >= 4, `pages: ${pages}`));
  for (const page of pages) {
    const tree = JSON.parse(read(`${page}.axtree.json`)) as AXTree;
    test(`${page}: default options`, () => {
      assert.equal(flattenAxtreeToStr(tree), read(`${page}.default.txt`));
    });
    test(`${page}: with_visible + with_clickable`, () => {
      const extraProperties = JSON.parse(read(`${page}.extra_properties.json`)) as ExtraProperties;
      const out = flattenAxtreeToStr(tree, { extraProperties, withVisible: true, withClickable: true });
      assert.equal(out, read(`${page}.visible.txt`));
    });
  }
});

// ---- hand-made trees -------------------------------------------------------

interface Spec {
  role: string;
  name?: string;
  bid?: string;
  value?: unknown;
  props?: Record<string, unknown>;
  children?: Spec[];
}

/** Builds a CDP-shaped tree (depth-first ids "1", "2", ...) from a compact spec. */
function axtree(root: Spec): AXTree {
  const nodes: AXTree["nodes"] = [];
  const add = (spec: Spec): string => {
    const nodeId = String(nodes.length + 1);
    const node: AXTree["nodes"][number] = {
      nodeId,
      role: { type: "role", value: spec.role },
      properties: Object.entries(spec.props ?? {}).map(([name, value]) => ({ name, value: { type: "x", value } })),
      childIds: [],
    };
    if (spec.name !== undefined) node.name = { type: "computedString", value: spec.name };
    if (spec.value !== undefined) node.value = { type: "string", value: spec.value };
    if (spec.bid !== undefined) node.browsergym_id = spec.bid;
    nodes.push(node);
    node.childIds = (spec.children ?? []).map(add);
    return nodeId;
  };
  add(root);
  return { nodes };
}

const lines = (...ls: string[]) => ls.join("\n");

describe("skip rules", () => {
  test("LineBreak is skipped, its children move up a level", () => {
    const t = axtree({
      role: "RootWebArea", name: "R",
      children: [{ role: "LineBreak", name: "\n", bid: "3", children: [{ role: "InlineTextBox", name: "\n" }] }],
    });
    assert.equal(flattenAxtreeToStr(t), lines("RootWebArea 'R'", "\tInlineTextBox ''"));
  });

  test("nodes without a name are skipped, but not nodes with an empty name", () => {
    const t = axtree({
      role: "RootWebArea", name: "R",
      children: [
        { role: "none", bid: "1", children: [{ role: "button", name: "Go", bid: "2" }] },
        { role: "form", name: "", bid: "3" },
      ],
    });
    assert.equal(flattenAxtreeToStr(t), lines("RootWebArea 'R'", "\t[2] button 'Go'", "\t[3] form ''"));
  });

  test("generic without printable attributes is skipped unless skipGeneric is off", () => {
    const t = axtree({
      role: "RootWebArea", name: "",
      children: [
        { role: "generic", name: "", bid: "1", props: { focusable: true }, children: [{ role: "link", name: "A", bid: "2" }] },
        { role: "generic", name: "", bid: "3", props: { live: "polite" } },
        { role: "generic", name: "Named", bid: "4", props: { atomic: true } },
      ],
    });
    assert.equal(
      flattenAxtreeToStr(t),
      lines("RootWebArea ''", "\t[2] link 'A'", "\t[3] generic, live='polite'", "\t[4] generic 'Named', atomic"),
    );
    assert.equal(
      flattenAxtreeToStr(t, { skipGeneric: false }),
      lines("RootWebArea ''", "\t[1] generic", "\t\t[2] link 'A'", "\t[3] generic, live='polite'", "\t[4] generic 'Named', atomic"),
    );
  });

  test("StaticText contained in the parent's name is skipped, other text kept", () => {
    const t = axtree({
      role: "RootWebArea", name: "",
      children: [
        { role: "link", name: "Read more about it", bid: "1", children: [{ role: "StaticText", name: "more" }] },
        { role: "button", name: "OK", bid: "2", children: [{ role: "StaticText", name: "Cancel" }] },
        { role: "paragraph", name: "", bid: "3", children: [{ role: "StaticText", name: "  spaced  " }] },
      ],
    });
    assert.equal(
      flattenAxtreeToStr(t),
      lines("RootWebArea ''", "\t[1] link 'Read more about it'", "\t[2] button 'OK'", "\t\tStaticText 'Cancel'",
        "\t[3] paragraph ''", "\t\tStaticText 'spaced'"),
    );
    assert.equal(
      flattenAxtreeToStr(t, { removeRedundantStaticText: false }).split("\n")[2],
      "\t\tStaticText 'more'",
    );
  });

  test("InlineTextBox is printed by default (as BrowserGym does) and dropped with skipInlineTextBoxes", () => {
    const t = axtree({
      role: "RootWebArea", name: "",
      children: [{ role: "link", name: "Home", bid: "8", children: [
        { role: "StaticText", name: "Home", children: [{ role: "InlineTextBox", name: "Home" }] },
      ] }],
    });
    assert.equal(flattenAxtreeToStr(t), lines("RootWebArea ''", "\t[8] link 'Home'", "\t\tInlineTextBox 'Home'"));
    assert.equal(flattenAxtreeToStr(t, { skipInlineTextBoxes: true }), lines("RootWebArea ''", "\t[8] link 'Home'"));
  });

  test("children missing from the tree and self references are ignored", () => {
    const t = axtree({ role: "RootWebArea", name: "R", children: [{ role: "button", name: "B", bid: "1" }] });
    t.nodes[0]!.childIds = ["1", "2", "99"];
    assert.equal(flattenAxtreeToStr(t), lines("RootWebArea 'R'", "\t[1] button 'B'"));
  });
});

describe("properties", () => {
  test("bare, dropped, repr'd and value", () => {
    const t = axtree({
      role: "textbox", name: " Name\u00a0", bid: "5", value: "it's",
      props: {
        focused: true, required: false, atomic: true, editable: "plaintext", readonly: false, level: 2,
        settable: true, multiline: false, invalid: "false", focusable: true,
        checked: "mixed", expanded: false, valuemax: 100, valuemin: 0.5,
      },
    });
    assert.equal(
      flattenAxtreeToStr(t),
      `[5] textbox 'Name' value="it's", focused, atomic, checked='mixed', expanded=False, valuemax=100, valuemin=0.5`,
    );
  });

  test("properties without a value are skipped", () => {
    const t = axtree({ role: "button", name: "B", bid: "1" });
    t.nodes[0]!.properties = [{ name: "labelledby", value: { type: "nodeList", relatedNodes: [] } }, { name: "x" }];
    assert.equal(flattenAxtreeToStr(t), "[1] button 'B'");
  });
});

describe("extra properties options", () => {
  const extra: ExtraProperties = {
    "1": { visibility: 1.0, bbox: [10, 20, 5, 3], clickable: true, set_of_marks: true },
    "2": { visibility: 0.25, bbox: null, clickable: false, set_of_marks: false },
  };
  const t = axtree({
    role: "RootWebArea", name: "",
    children: [
      { role: "button", name: "Shown", bid: "1", props: { focused: true } },
      { role: "list", name: "", bid: "2", children: [{ role: "StaticText", name: "inside hidden" }, { role: "listitem", name: "", bid: "9" }] },
      { role: "paragraph", name: "" },
    ],
  });

  test("attribute order: box, center, clickable, visible, som, then AX properties", () => {
    const out = flattenAxtreeToStr(t, {
      extraProperties: extra, withVisible: true, withClickable: true, withSom: true,
      withCenterCoords: true, withBoundingBoxCoords: true,
    });
    assert.equal(out.split("\n")[1], `\t[1] button 'Shown', box="(10,20,15,23)", center="(12,22)", clickable, visible, som, focused`);
  });

  test("coordDecimals", () => {
    const out = flattenAxtreeToStr(t, { extraProperties: extra, withCenterCoords: true, coordDecimals: 2 });
    assert.equal(out.split("\n")[1], `\t[1] button 'Shown', center="(12.50,21.50)", focused`);
  });

  test("filterVisibleOnly drops the node and its StaticText, keeps bid-less nodes", () => {
    const out = flattenAxtreeToStr(t, { extraProperties: extra, filterVisibleOnly: true });
    assert.equal(out, lines("RootWebArea ''", "\t[1] button 'Shown', focused", "\t[9] listitem ''", "\tparagraph ''"));
  });

  test("filterWithBidOnly / filterSomOnly / hideAllBids / hideBidIfInvisible", () => {
    assert.equal(
      flattenAxtreeToStr(t, { extraProperties: extra, filterWithBidOnly: true }),
      lines("[1] button 'Shown', focused", "[2] list ''", "\tStaticText 'inside hidden'", "\t[9] listitem ''"),
    );
    // bid 9 has no extra properties: BrowserGym then applies no filter to it
    assert.equal(
      flattenAxtreeToStr(t, { extraProperties: extra, filterSomOnly: true }),
      lines("[1] button 'Shown', focused", "[9] listitem ''"),
    );
    assert.ok(!flattenAxtreeToStr(t, { hideAllBids: true }).includes("["));
    assert.equal(
      flattenAxtreeToStr(t, { extraProperties: extra, hideBidIfInvisible: true }).split("\n")[2],
      "\tlist ''",
    );
  });

  test("extra properties are required by the options that use them", () => {
    assert.throws(() => flattenAxtreeToStr(t, { withVisible: true }), /extra_properties argument required/);
  });
});
