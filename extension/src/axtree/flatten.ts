/**
 * BrowserGym's `flatten_axtree_to_str` (browsergym.utils.obs) in TypeScript.
 * Same options, same defaults, same output byte for byte.
 */
import { formatFixed, pyRepr, pyStrip, pyTruthy, reprString } from "./pyrepr.js";
import type { AXNode, AXTree, ExtraProperties } from "./types.js";

export const IGNORED_AXTREE_ROLES: readonly string[] = ["LineBreak"];

export const IGNORED_AXTREE_PROPERTIES: readonly string[] = [
  "editable",
  "readonly",
  "level",
  "settable",
  "multiline",
  "invalid",
  "focusable",
];

/** Properties printed bare (just their name) when truthy, and not at all otherwise. */
const BARE_WHEN_TRUE = new Set(["required", "focused", "atomic"]);

export interface FlattenOptions {
  extraProperties?: ExtraProperties | null;
  withVisible?: boolean;
  withClickable?: boolean;
  withCenterCoords?: boolean;
  withBoundingBoxCoords?: boolean;
  withSom?: boolean;
  skipGeneric?: boolean;
  filterVisibleOnly?: boolean;
  filterWithBidOnly?: boolean;
  filterSomOnly?: boolean;
  coordDecimals?: number;
  ignoredRoles?: readonly string[];
  ignoredProperties?: readonly string[];
  removeRedundantStaticText?: boolean;
  hideBidIfInvisible?: boolean;
  hideAllChildren?: boolean;
  hideAllBids?: boolean;
  /**
   * Not a BrowserGym option: drop Chromium's InlineTextBox nodes (printed by
   * BrowserGym under recent Chromium, absent from older training data).
   * Their children, if any, move up one level like any skipped node's.
   */
  skipInlineTextBoxes?: boolean;
}

type Resolved = Required<Omit<FlattenOptions, "extraProperties">> & {
  extraProperties: ExtraProperties | null;
};

const DEFAULTS: Resolved = {
  extraProperties: null,
  withVisible: false,
  withClickable: false,
  withCenterCoords: false,
  withBoundingBoxCoords: false,
  withSom: false,
  skipGeneric: true,
  filterVisibleOnly: false,
  filterWithBidOnly: false,
  filterSomOnly: false,
  coordDecimals: 0,
  ignoredRoles: IGNORED_AXTREE_ROLES,
  ignoredProperties: IGNORED_AXTREE_PROPERTIES,
  removeRedundantStaticText: true,
  hideBidIfInvisible: false,
  hideAllChildren: false,
  hideAllBids: false,
  skipInlineTextBoxes: false,
};

/** Formats the accessibility tree into BrowserGym's indented text. */
export function flattenAxtreeToStr(tree: AXTree, options: FlattenOptions = {}): string {
  const opts: Resolved = { ...DEFAULTS };
  for (const [k, v] of Object.entries(options)) {
    if (v !== undefined) (opts as Record<string, unknown>)[k] = v;
  }
  const needsExtra =
    opts.withVisible ||
    opts.withClickable ||
    opts.withCenterCoords ||
    opts.withBoundingBoxCoords ||
    opts.withSom ||
    opts.filterVisibleOnly ||
    opts.filterWithBidOnly ||
    opts.filterSomOnly;
  if (opts.extraProperties == null && needsExtra) {
    throw new Error("extra_properties argument required");
  }

  const nodes = tree.nodes;
  if (nodes.length === 0) throw new Error("empty AX tree"); // Python raises IndexError
  const indexById = new Map<string, number>();
  for (let idx = 0; idx < nodes.length; idx++) indexById.set(nodes[idx]!.nodeId, idx);

  // BrowserGym joins each node's line and its children's non-empty texts with "\n":
  // that is every printed line in depth-first order, joined once at the end.
  const lines: string[] = [];
  const dfs = (idx: number, depth: number, parentFiltered: boolean, parentName: string): void => {
    const node = nodes[idx]!;
    const line = formatNode(node, depth, parentFiltered, parentName, opts);
    if (line.text) lines.push(line.text);
    const childDepth = line.skipped ? depth : depth + 1;
    for (const childId of node.childIds ?? []) {
      const childIdx = indexById.get(childId);
      if (childIdx === undefined || childId === node.nodeId) continue;
      dfs(childIdx, childDepth, line.filtered, line.name);
    }
  };
  dfs(0, 0, false, "");
  return lines.join("\n");
}

interface NodeLine {
  /** The printed line ("" when skipped). */
  text: string;
  /** Not printed; children keep the node's depth. */
  skipped: boolean;
  /** Filtered by an extra-property filter; passed down to children. */
  filtered: boolean;
  /** The node's raw name, passed down for the redundant-StaticText check. */
  name: string;
}

function formatNode(
  node: AXNode,
  depth: number,
  parentFiltered: boolean,
  parentName: string,
  opts: Resolved,
): NodeLine {
  const role = node.role?.value as string;
  const result: NodeLine = { text: "", skipped: false, filtered: false, name: "" };

  if (opts.ignoredRoles.includes(role)) {
    result.skipped = true;
    return result;
  }
  if (!("name" in node) || node.name === undefined) {
    result.skipped = true;
    return result;
  }
  const name = node.name.value as string;
  result.name = name;
  const hasValue = node.value !== undefined && "value" in node.value;
  const bid = node.browsergym_id ?? null;

  let attributes = nodeAttributes(node, opts.ignoredProperties);
  let skip = false;
  if (opts.skipGeneric && role === "generic" && attributes.length === 0) skip = true;
  if (opts.hideAllChildren && parentFiltered) skip = true;
  if (opts.skipInlineTextBoxes && role === "InlineTextBox") skip = true;

  if (role === "StaticText") {
    if (parentFiltered) skip = true;
    else if (opts.removeRedundantStaticText && parentName.includes(name)) skip = true;
  } else {
    const processed = processBid(bid, opts);
    result.filtered = processed.filter;
    skip = skip || processed.filter;
    if (processed.attributes.length > 0) attributes = [...processed.attributes, ...attributes];
  }

  result.skipped = skip;
  if (skip) return result;

  let text = role === "generic" && !name ? role : `${role} ${reprString(pyStrip(name))}`;
  const hideBid =
    opts.hideAllBids ||
    bid === null ||
    (opts.hideBidIfInvisible && (opts.extraProperties?.[bid]?.visibility ?? 0) < 0.5);
  if (!hideBid) text = `[${bid}] ${text}`;
  if (hasValue) text += ` value=${pyRepr(node.value!.value)}`;
  if (attributes.length > 0) text += ", " + attributes.join(", ");
  result.text = "\t".repeat(depth) + text;
  return result;
}

/** The node's AX properties as BrowserGym prints them. */
function nodeAttributes(node: AXNode, ignored: readonly string[]): string[] {
  const attributes: string[] = [];
  for (const prop of node.properties ?? []) {
    if (prop.value === undefined || !("value" in prop.value)) continue;
    const value = prop.value.value;
    if (ignored.includes(prop.name)) continue;
    if (BARE_WHEN_TRUE.has(prop.name)) {
      if (pyTruthy(value)) attributes.push(prop.name);
    } else {
      attributes.push(`${prop.name}=${pyRepr(value)}`);
    }
  }
  return attributes;
}

/** BrowserGym's `_process_bid`: extra attributes to print and whether to filter the node out. */
function processBid(bid: string | null, opts: Resolved): { filter: boolean; attributes: string[] } {
  const attributes: string[] = [];
  let filter = false;
  if (bid === null) {
    if (opts.filterWithBidOnly || opts.filterSomOnly) filter = true;
    // filterVisibleOnly keeps bid-less nodes: their visibility is unknown
    return { filter, attributes };
  }
  const extra = opts.extraProperties ?? {};
  if (!Object.prototype.hasOwnProperty.call(extra, bid)) return { filter, attributes };
  const props = extra[bid]!;
  const visible = props.visibility >= 0.5;
  if (opts.filterVisibleOnly && !visible) filter = true;
  if (opts.filterSomOnly && !props.set_of_marks) filter = true;
  // BrowserGym inserts each at the front, so the last one added is printed first.
  if (opts.withSom && props.set_of_marks) attributes.unshift("som");
  if (opts.withVisible && visible) attributes.unshift("visible");
  if (opts.withClickable && props.clickable) attributes.unshift("clickable");
  const bbox = props.bbox;
  if (opts.withCenterCoords && bbox != null) {
    const [x, y, w, h] = bbox as number[] as [number, number, number, number];
    attributes.unshift(`center="${coordStr([x + w / 2, y + h / 2], opts.coordDecimals)}"`);
  }
  if (opts.withBoundingBoxCoords && bbox != null) {
    const [x, y, w, h] = bbox as number[] as [number, number, number, number];
    attributes.unshift(`box="${coordStr([x, y, x + w, y + h], opts.coordDecimals)}"`);
  }
  return { filter, attributes };
}

function coordStr(coords: number[], decimals: number): string {
  return "(" + coords.map((c) => formatFixed(c, decimals)).join(",") + ")";
}
