import assert from "node:assert/strict";
import { test } from "node:test";
import { flattenAxtreeToStr } from "../src/axtree/flatten.js";
import type { AXNode } from "../src/axtree/types.js";
import { mergeFrameAxtrees, pruneBackendNodes } from "../src/capture/merge.js";

const node = (nodeId: string, role: string, name: string, childIds: string[], extra: Partial<AXNode> = {}): AXNode => ({
  nodeId,
  role: { type: "role", value: role },
  name: { type: "computedString", value: name },
  childIds,
  ...extra,
});

test("iframes are linked to their frame's root, bids come from the ARIA smuggling", async () => {
  const top = [
    node("1", "RootWebArea", "Top", ["2", "3"]),
    node("2", "Iframe", "Widget", [], { backendDOMNodeId: 2, description: { type: "string", value: "browsergym_id_a " } }),
    node("3", "button", "Go", [], { properties: [{ name: "roledescription", value: { type: "string", value: "browsergym_id_7 " } }] }),
  ];
  const inner = [node("10", "RootWebArea", "Inner", ["11"]), node("11", "button", "In", [], { description: { type: "string", value: "browsergym_id_a3 " } })];
  const tree = await mergeFrameAxtrees(new Map([["F0", top], ["F1", inner]]), async (b) => (b === 2 ? "F1" : null));
  assert.equal(
    flattenAxtreeToStr(tree),
    "RootWebArea 'Top'\n\t[a] Iframe 'Widget'\n\t\tRootWebArea 'Inner'\n\t\t\t[a3] button 'In'\n\t[7] button 'Go'",
  );
});

test("the overlay's nodes are pruned with their subtrees", () => {
  const tree = {
    nodes: [
      node("1", "RootWebArea", "Top", ["2", "3"]),
      node("2", "button", "Page", []),
      node("3", "region", "webshepherd", ["4"], { backendDOMNodeId: 30 }),
      node("4", "StaticText", "panel text", []),
    ],
  };
  assert.equal(flattenAxtreeToStr(pruneBackendNodes(tree, new Set([30]))), "RootWebArea 'Top'\n\tbutton 'Page'");
});

test("a frame of 300,000 nodes merges and flattens (no argument spread, no deep recursion per sibling)", async () => {
  const n = 300_000;
  const nodes = [node("0", "RootWebArea", "Big", [])];
  for (let i = 1; i <= n; i++) {
    nodes[0]!.childIds!.push(String(i));
    nodes.push(node(String(i), "button", `B${i}`, [], { description: { type: "string", value: `browsergym_id_${i} ` } }));
  }
  const tree = await mergeFrameAxtrees(new Map([["F0", nodes]]), async () => null);
  assert.equal(tree.nodes.length, n + 1);
  const lines = flattenAxtreeToStr(tree).split("\n");
  assert.equal(lines.length, n + 1);
  assert.equal(lines[n], `\t[${n}] button 'B${n}'`);
  assert.equal(pruneBackendNodes(tree, new Set([1])).nodes.length, n + 1);
});
