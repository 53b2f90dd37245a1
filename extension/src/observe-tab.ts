/** One observation of a tab: the AX-tree text the daemon receives, plus a throttled screenshot. */
import { screenshotBoxes } from "./capture/boxes.js";
import { cdpForTab, type CdpSend } from "./capture/cdp.js";
import { captureAxtree, type AxtreeCapture } from "./capture/capture-axtree.js";
import { observationText, type ObservationFlags } from "./capture/observation-text.js";
import { CaptureThrottle } from "./capture-throttle.js";
import type { ToContent } from "./messages.js";
import type { Observation } from "./protocol.gen.js";

const screenshots = new CaptureThrottle(async () => {
  const tab = lastShotTab;
  if (!tab || tab.id === undefined) throw new Error("no tab");
  const tabId = tab.id;
  // the overlay is no part of an observation: hidden while the tab is shot
  await overlayHidden(tabId, true);
  try {
    return await chrome.tabs.captureVisibleTab(tab.windowId, { format: "png" });
  } finally {
    void overlayHidden(tabId, false); // also after a late answer to the hiding
  }
}, 500);

/** Hides or shows the tab's overlay; true once painted (false: no content script answered within 500 ms). */
function overlayHidden(tabId: number, hidden: boolean): Promise<boolean> {
  const msg: ToContent = { kind: "overlay.hidden", hidden };
  const answered = chrome.tabs.sendMessage(tabId, msg, { frameId: 0 }).then(
    () => true,
    () => false,
  );
  return Promise.race([answered, new Promise<boolean>((r) => setTimeout(() => r(false), 500))]);
}
let lastShotTab: chrome.tabs.Tab | null = null;

const locks = new Map<number, Promise<unknown>>();

/** Runs `fn` after any capture already running on the tab (marking must not interleave). */
function serialized<T>(tabId: number, fn: () => Promise<T>): Promise<T> {
  const prev = locks.get(tabId) ?? Promise.resolve();
  const next = prev.catch(() => undefined).then(fn);
  locks.set(tabId, next);
  void next.finally(() => {
    if (locks.get(tabId) === next) locks.delete(tabId);
  });
  return next;
}

export interface TabObservation {
  observation: Observation;
  capture: AxtreeCapture;
}

export function observeTab(tabId: number, flags: ObservationFlags, withScreenshot = true): Promise<TabObservation> {
  return serialized(tabId, async () => {
    const send = await cdpForTab(tabId);
    // the extra properties (a DOM snapshot) serve the visible flags and the screenshot's boxes only
    const shot = withScreenshot && (await chrome.tabs.get(tabId)).active;
    const t0 = performance.now();
    const capture = await captureAxtree(send, { extraProperties: flags === "visible" || shot });
    let observation: Observation;
    let tab: chrome.tabs.Tab;
    try {
      // the tab as it is after the capture: a navigation under way during it must not pair the new tree with the old URL
      tab = await chrome.tabs.get(tabId);
      const t = performance.now();
      observation = { url: tab.url ?? "", axtree: observationText(capture, flags), elements: capture.elements };
      capture.timing.flattenMs = performance.now() - t;
    } finally {
      await capture.settled; // unmarked while flattening
    }
    capture.timing.totalMs = performance.now() - t0;
    if (shot && tab.active) {
      try {
        lastShotTab = tab;
        const dataUrl = await screenshots.take();
        observation.screenshot = { mime: "image/png", data: dataUrl.slice(dataUrl.indexOf(",") + 1) };
        observation.boxes = screenshotBoxes(capture.extraProperties, await pixelRatio(send));
      } catch {
        // no screenshot this time (window hidden, quota): the AX tree is what the model needs
      }
    }
    return { observation, capture };
  });
}

/** The tab's device pixel ratio (screenshot pixels per CSS pixel); 1 when it cannot be read. */
async function pixelRatio(send: CdpSend): Promise<number> {
  try {
    const r = await send<{ result: { value?: unknown } }>("Runtime.evaluate", {
      expression: "window.devicePixelRatio",
      returnByValue: true,
    });
    const v = Number(r.result.value);
    return Number.isFinite(v) && v > 0 ? v : 1;
  } catch {
    return 1;
  }
}

export function screenshotCalls(): number {
  return screenshots.calls;
}
