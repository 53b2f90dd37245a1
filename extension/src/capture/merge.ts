/** BrowserGym's `extract_merged_axtree`: one tree from per-frame AX trees, iframes linked to their frame's root. */
import { attachBrowsergymIds } from "../axtree/bids.js";
import type { AXNode, AXTree } from "../axtree/types.js";

/**
 * `frames` maps frameId -> that frame's `getFullAXTree` nodes, top frame first.
 * `iframeContent(backendNodeId)` answers which frame an Iframe node shows.
 */
export async function mergeFrameAxtrees(
  frames: Map<string, AXNode[]>,
  iframeContent: (backendDOMNodeId: number) => Promise<string | null>,
): Promise<AXTree> {
  for (const nodes of frames.values()) attachBrowsergymIds(nodes);
  const merged: AXNode[] = [];
  const iframes: AXNode[] = [];
  for (const nodes of frames.values()) {
    for (const node of nodes) {
      merged.push(node); // no spread: a 20,000-element page overflows the call stack
      if (node.role?.value === "Iframe" && node.backendDOMNodeId !== undefined) iframes.push(node);
    }
  }
  // asked side by side; each answer links one iframe node
  const shown = await Promise.all(iframes.map((node) => iframeContent(node.backendDOMNodeId!)));
  iframes.forEach((node, k) => {
    const frameId = shown[k];
    const root = frameId == null ? undefined : frames.get(frameId)?.[0];
    if (root) (node.childIds ??= []).push(root.nodeId);
  });
  return { nodes: merged };
}

/** Removes the nodes of these DOM nodes (the overlay host and its shadow tree), with their AX subtrees. */
export function pruneBackendNodes(tree: AXTree, backendDOMNodeIds: Set<number>): AXTree {
  const byId = new Map(tree.nodes.map((n) => [n.nodeId, n]));
  const targets = tree.nodes.filter((n) => n.backendDOMNodeId !== undefined && backendDOMNodeIds.has(n.backendDOMNodeId));
  if (targets.length === 0) return tree;
  const drop = new Set<string>();
  const stack = targets.map((t) => t.nodeId);
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (drop.has(id)) continue;
    drop.add(id);
    for (const c of byId.get(id)?.childIds ?? []) stack.push(c);
  }
  const nodes = tree.nodes.filter((n) => !drop.has(n.nodeId));
  for (const n of nodes) if (n.childIds) n.childIds = n.childIds.filter((c) => !drop.has(c));
  return { nodes };
}
