/**
 * Captures a tab's accessibility tree the way BrowserGym does: mark every frame,
 * snapshot the DOM for the extra properties, fetch and merge the per-frame AX
 * trees, undo the ARIA smuggling. The overlay's host is left out of all of it.
 */
import type { AXNode, AXTree, ExtraProperties } from "../axtree/types.js";
import type { CdpSend } from "./cdp.js";
import { MAX_ELEMENTS, collectElementFacts, type ElementFactsWire } from "./element-facts.js";
import { extraPropertiesFromSnapshot, type DomSnapshot } from "./extra-properties.js";
import { callOn, frameDocument, frameOwner, listFrames, type FrameInfo } from "./frames.js";
import { BID_ATTR, OVERLAY_HOST_ATTR, markFrameElements, unmarkFrameElements } from "./mark-elements.js";
import { mergeFrameAxtrees, pruneBackendNodes } from "./merge.js";

export interface AxtreeCapture {
  tree: AXTree;
  /** BrowserGym's extra properties; empty when the capture was asked not to take the DOM snapshot. */
  extraProperties: ExtraProperties;
  /** bid -> what the page says of the element (links, downloads, the form it submits): the guards read it. */
  elements: Record<string, ElementFactsWire>;
  warnings: string[];
  timing: CaptureTiming;
  /** Resolves once every frame is unmarked and released: the tab's next capture waits for it. */
  settled: Promise<void>;
}

/** Where a capture's time went, in ms (the phases overlap where CDP calls run side by side). */
export interface CaptureTiming {
  /** Frames listed and every frame marked (the page-side script, its IntersectionObserver wait included). */
  markMs: number;
  /** `DOMSnapshot.captureSnapshot` until its result reached the worker (0 when not taken). */
  snapshotMs: number;
  /** The extra properties computed from the snapshot. */
  extraMs: number;
  /** `Accessibility.getFullAXTree` of every frame until the last result reached the worker. */
  axtreeMs: number;
  /** Bids moved out of ARIA, frames merged, the overlay pruned. */
  mergeMs: number;
  /** The ARIA smuggling undone and the frames' documents released. */
  unmarkMs: number;
  /** The text flattened from the tree (set by the caller that flattens). */
  flattenMs: number;
  totalMs: number;
}

export interface CaptureOptions {
  /** Take the DOM snapshot for the extra properties (visibility, boxes); the default text does not need it. */
  extraProperties?: boolean;
}

function isSandboxedWithoutScripts(sandbox: string | null): boolean {
  return sandbox !== null && !sandbox.split(/\s+/).includes("allow-scripts");
}

/** Marks each frame, parents first; a child frame takes its iframe element's bid as prefix. */
async function markAll(send: CdpSend, frames: FrameInfo[], warnings: string[]): Promise<Map<string, string>> {
  const docs = new Map<string, string>();
  for (const frame of frames) {
    let parentBid = "";
    if (frame.parentId !== null) {
      if (!docs.has(frame.parentId)) continue; // its parent was skipped
      const owner = await frameOwner(send, frame.frameId);
      if (!owner) continue;
      const [bid, sandbox] = await callOn<[string | null, string | null]>(
        send,
        owner.objectId,
        function (this: Element, attr: string) {
          return [this.getAttribute(attr), this.getAttribute("sandbox")];
        },
        [BID_ATTR],
      );
      if (isSandboxedWithoutScripts(sandbox) || bid === null) continue;
      parentBid = bid;
    }
    const doc = await frameDocument(send, frame).catch(() => null);
    if (doc === null) continue;
    warnings.push(...(await callOn<string[]>(send, doc, markFrameElements, [parentBid, BID_ATTR, OVERLAY_HOST_ATTR])));
    docs.set(frame.frameId, doc);
  }
  return docs;
}

interface DomNode { backendNodeId: number; children?: DomNode[]; shadowRoots?: DomNode[] }

const OVERLAY_GROUP = "webshepherd-overlay-hosts";

/**
 * backendNodeIds of every element carrying the overlay's attribute and of everything under
 * them, shadow trees included: all of them, so that a page's decoy with the same attribute
 * cannot let the real overlay into the observation.
 */
async function overlayBackendIds(send: CdpSend, topDoc: string | undefined): Promise<Set<number>> {
  const ids = new Set<number>();
  if (!topDoc) return ids;
  const res = await send<{ result: { objectId?: string } }>("Runtime.callFunctionOn", {
    objectId: topDoc,
    functionDeclaration: `function (a) { return Array.from(this.querySelectorAll("[" + a + "]")); }`,
    arguments: [{ value: OVERLAY_HOST_ATTR }],
    objectGroup: OVERLAY_GROUP,
  });
  const list = res.result.objectId;
  if (!list) return ids;
  try {
    const { result } = await send<{ result: { name: string; value?: { objectId?: string } }[] }>("Runtime.getProperties", {
      objectId: list,
      ownProperties: true,
    });
    for (const prop of result) {
      const objectId = prop.value?.objectId;
      if (!/^\d+$/.test(prop.name) || !objectId) continue;
      const { node } = await send<{ node: DomNode }>("DOM.describeNode", { objectId, depth: -1, pierce: true });
      const stack = [node];
      while (stack.length > 0) {
        const n = stack.pop()!;
        ids.add(n.backendNodeId);
        for (const c of n.children ?? []) stack.push(c);
        for (const c of n.shadowRoots ?? []) stack.push(c);
      }
    }
  } finally {
    await send("Runtime.releaseObjectGroup", { objectGroup: OVERLAY_GROUP }).catch(() => undefined);
  }
  return ids;
}

export async function captureAxtree(send: CdpSend, options: CaptureOptions = {}): Promise<AxtreeCapture> {
  const withExtra = options.extraProperties ?? true;
  const t0 = performance.now();
  const timing: CaptureTiming = { markMs: 0, snapshotMs: 0, extraMs: 0, axtreeMs: 0, mergeMs: 0, unmarkMs: 0, flattenMs: 0, totalMs: 0 };
  const warnings: string[] = [];
  const frames = await listFrames(send);
  const docs = await markAll(send, frames, warnings);
  const t1 = performance.now();
  timing.markMs = t1 - t0;
  let unmarking: Promise<void> | null = null;
  let cleaned = false;
  const cleanUp = async (started: Promise<void> | null) => {
    await (started ?? unmarkAll(send, docs, timing));
    await Promise.all([...docs.values()].map((doc) => send("Runtime.releaseObject", { objectId: doc }).catch(() => undefined)));
    timing.totalMs = performance.now() - t0;
  };
  try {
    // Sent together: Chromium answers them in order while this worker handles each result as it comes.
    const overlayIds = overlayBackendIds(send, docs.get(frames[0]!.frameId));
    const facts = Promise.all(
      frames
        .filter((frame) => docs.has(frame.frameId))
        .map((frame) =>
          isolatedFacts(send, frame).catch((err) => {
            warnings.push(`element facts: ${String(err)}`);
            return {};
          }),
        ),
    );
    const snapshot = withExtra
      ? send<DomSnapshot>("DOMSnapshot.captureSnapshot", {
          computedStyles: [],
          includeDOMRects: true, // clientRects and bounds: the boxes
          includePaintOrder: false, // read by nothing here
        }).then((snap) => {
          const t = performance.now();
          timing.snapshotMs = t - t1;
          const props = extraPropertiesFromSnapshot(snap, 1);
          timing.extraMs = performance.now() - t;
          return props;
        })
      : Promise.resolve({} as ExtraProperties);
    const axtrees = frames.map((frame) =>
      send<{ nodes: AXNode[] }>("Accessibility.getFullAXTree", { frameId: frame.frameId }).then(
        ({ nodes }) => nodes,
        (err) => {
          warnings.push(`AX tree of frame ${frame.frameId}: ${String(err)}`);
          return null;
        },
      ),
    );
    const perFrame = new Map<string, AXNode[]>();
    for (const [k, frame] of frames.entries()) {
      const nodes = await axtrees[k]!;
      if (nodes !== null) perFrame.set(frame.frameId, nodes);
    }
    const t2 = performance.now();
    timing.axtreeMs = t2 - t1;
    // the trees are taken: the page gets its ARIA back while this worker merges
    unmarking = unmarkAll(send, docs, timing);
    let tree = await mergeFrameAxtrees(perFrame, async (backendNodeId) => {
      const { node } = await send<{ node: { frameId?: string; contentDocument?: { frameId?: string } } }>(
        "DOM.describeNode",
        { backendNodeId, depth: 1 },
      );
      // Chromium 156 names the content frame on the owner node itself.
      return node.contentDocument?.frameId ?? node.frameId ?? null;
    });
    const overlay = await overlayIds;
    if (overlay.size > 0) tree = pruneBackendNodes(tree, overlay);
    timing.mergeMs = performance.now() - t2;
    const extraProperties = await snapshot;
    const elements: Record<string, ElementFactsWire> = {};
    let kept = 0;
    for (const frameFacts of await facts) {
      for (const [bid, f] of Object.entries(frameFacts)) {
        if (kept++ >= MAX_ELEMENTS) break;
        elements[bid] = f;
      }
    }
    // the caller flattens while the page is still being unmarked
    const settled = cleanUp(unmarking);
    cleaned = true;
    return { tree, extraProperties, elements, warnings, timing, settled };
  } finally {
    if (!cleaned) await cleanUp(unmarking);
  }
}

/** The world the element facts are read in: the page's scripts cannot redefine what they call there. */
export const ISOLATED_WORLD = "webshepherd-capture";

/**
 * The frame's element facts, read in an isolated world of the frame (`Page.createIsolatedWorld`):
 * the DOM is the page's, its prototypes and globals are not, so a page that overrides
 * `Element.prototype.closest`, `getAttribute` or a form's getters cannot lie to the capture.
 */
async function isolatedFacts(send: CdpSend, frame: FrameInfo): Promise<Record<string, ElementFactsWire>> {
  const { executionContextId } = await send<{ executionContextId: number }>("Page.createIsolatedWorld", {
    frameId: frame.frameId,
    worldName: ISOLATED_WORLD,
    grantUniveralAccess: false,
  });
  const doc = await frameDocument(send, frame, executionContextId);
  if (doc === null) throw new Error(`frame ${frame.frameId}: no document in the isolated world`);
  try {
    return await callOn<Record<string, ElementFactsWire>>(send, doc, collectElementFacts, [BID_ATTR, OVERLAY_HOST_ATTR, MAX_ELEMENTS]);
  } finally {
    await send("Runtime.releaseObject", { objectId: doc }).catch(() => undefined);
  }
}

/** BrowserGym's `_post_extract` in every marked frame, side by side. */
async function unmarkAll(send: CdpSend, docs: Map<string, string>, timing: CaptureTiming): Promise<void> {
  const t = performance.now();
  await Promise.all([...docs.values()].map((doc) => callOn(send, doc, unmarkFrameElements, [OVERLAY_HOST_ATTR]).catch(() => undefined)));
  timing.unmarkMs = performance.now() - t;
}
