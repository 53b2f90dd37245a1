/** Frames of a tab as CDP sees them, and calling a page function in a frame's main world (or an isolated one). */
import type { CdpSend } from "./cdp.js";

export interface FrameInfo {
  frameId: string;
  parentId: string | null;
}

interface FrameTreeNode {
  frame: { id: string; parentId?: string };
  childFrames?: FrameTreeNode[];
}

/** Every frame of the page, parents before children. */
export async function listFrames(send: CdpSend): Promise<FrameInfo[]> {
  const { frameTree } = await send<{ frameTree: FrameTreeNode }>("Page.getFrameTree");
  const out: FrameInfo[] = [];
  const walk = (node: FrameTreeNode, parentId: string | null) => {
    out.push({ frameId: node.frame.id, parentId });
    for (const child of node.childFrames ?? []) walk(child, node.frame.id);
  };
  walk(frameTree, null);
  return out;
}

/** A remote object id for the element hosting `frameId` (its iframe), or null for the top frame. */
export async function frameOwner(send: CdpSend, frameId: string): Promise<{ backendNodeId: number; objectId: string } | null> {
  try {
    const { backendNodeId } = await send<{ backendNodeId: number }>("DOM.getFrameOwner", { frameId });
    const { object } = await send<{ object: { objectId: string } }>("DOM.resolveNode", { backendNodeId });
    return { backendNodeId, objectId: object.objectId };
  } catch {
    return null;
  }
}

/** The frame's document as a remote object in the frame's main world, or in the execution context given. */
export async function frameDocument(send: CdpSend, frame: FrameInfo, executionContextId?: number): Promise<string | null> {
  let backendNodeId: number | undefined;
  if (frame.parentId === null) {
    const { root } = await send<{ root: { backendNodeId: number } }>("DOM.getDocument", { depth: 0 });
    backendNodeId = root.backendNodeId;
  } else {
    const owner = await frameOwner(send, frame.frameId);
    if (!owner) return null;
    const { node } = await send<{ node: { contentDocument?: { backendNodeId: number } } }>("DOM.describeNode", {
      backendNodeId: owner.backendNodeId,
      depth: 1,
    });
    backendNodeId = node.contentDocument?.backendNodeId;
  }
  if (backendNodeId === undefined) return null;
  const { object } = await send<{ object: { objectId: string } }>("DOM.resolveNode", { backendNodeId, executionContextId });
  return object.objectId;
}

/** Calls `fn` with `this` = the remote object and JSON arguments; returns its (awaited) value. */
export async function callOn<T>(send: CdpSend, objectId: string, fn: Function, args: unknown[]): Promise<T> {
  const res = await send<{ result: { value?: T }; exceptionDetails?: { exception?: { description?: string }; text: string } }>(
    "Runtime.callFunctionOn",
    {
      objectId,
      functionDeclaration: fn.toString(),
      arguments: args.map((value) => ({ value })),
      returnByValue: true,
      awaitPromise: true,
    },
  );
  if (res.exceptionDetails) {
    throw new Error(res.exceptionDetails.exception?.description ?? res.exceptionDetails.text);
  }
  return res.result.value as T;
}
