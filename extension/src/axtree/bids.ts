/**
 * Recovering BrowserGym bids from a raw `Accessibility.getFullAXTree` result.
 *
 * BrowserGym's page script prefixes each element's aria-roledescription (and,
 * as a fallback, aria-description) with `browsergym_id_<bid> `. In the AX tree
 * these show up as the `roledescription` property and the node's `description`.
 * BrowserGym strips the prefix, drops what became empty and stores the bid as
 * `node.browsergym_id`, which is what the flattener prints.
 */
import type { AXNode } from "./types.js";

// Python's re: `\s` (unicode) and `.` (anything but "\n") spelled out for JS.
const PY_SPACE = "\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const DATA_REGEXP = new RegExp(`^browsergym_id_([a-zA-Z0-9]+)[${PY_SPACE}]?([^\\n]*)$`, "u");

/**
 * Splits `browsergym_id_<bid> <original>` into [[bid], original].
 * Strings without the prefix come back unchanged with no data items.
 */
export function extractDataItemsFromAria(aria: string): [string[], string] {
  if (!aria.startsWith("browsergym_id_")) return [[], aria];
  const match = DATA_REGEXP.exec(aria);
  if (!match) return [[], aria];
  return [[match[1]!], match[2]!];
}

/** Moves smuggled bids into `browsergym_id`, in place, for every node. Returns the nodes. */
export function attachBrowsergymIds(nodes: AXNode[]): AXNode[] {
  for (const node of nodes) {
    let items: string[] = [];
    const props = node.properties ?? [];
    const i = props.findIndex((p) => p.name === "roledescription");
    const prop = props[i];
    if (prop?.value && typeof prop.value.value === "string") {
      const [found, rest] = extractDataItemsFromAria(prop.value.value);
      items = found;
      prop.value.value = rest;
      if (rest === "") props.splice(i, 1);
    }
    if (node.description && typeof node.description.value === "string") {
      const [found, rest] = extractDataItemsFromAria(node.description.value);
      node.description.value = rest;
      if (rest === "") delete node.description;
      if (items.length === 0) items = found;
    }
    if (items.length > 0) node.browsergym_id = items[0]!;
  }
  return nodes;
}
