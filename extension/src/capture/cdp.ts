/** One `chrome.debugger` attachment per tab, shared by every capture of that tab. */

export type CdpSend = <T = any>(method: string, params?: Record<string, unknown>) => Promise<T>;

const attached = new Set<number>();
const detachListeners: ((tabId: number) => void)[] = [];

chrome.debugger?.onDetach?.addListener((source) => {
  if (source.tabId === undefined) return;
  attached.delete(source.tabId);
  for (const fn of detachListeners) fn(source.tabId);
});

/** Calls `fn` when a tab's attachment goes away (the tab closed, the person cancelled it). */
export function onDetached(fn: (tabId: number) => void): void {
  detachListeners.push(fn);
}

/** Attaches (once) and returns a `send` bound to the tab. */
export async function cdpForTab(tabId: number): Promise<CdpSend> {
  if (!attached.has(tabId)) {
    try {
      await chrome.debugger.attach({ tabId }, "1.3");
    } catch (err) {
      // Attached by an earlier incarnation of this worker: that attachment is ours and still valid.
      if (!String(err).includes("Another debugger is already attached")) throw err;
    }
    attached.add(tabId);
  }
  return (method, params) => chrome.debugger.sendCommand({ tabId }, method, params) as Promise<any>;
}

export async function detachTab(tabId: number): Promise<void> {
  if (!attached.delete(tabId)) return;
  await chrome.debugger.detach({ tabId }).catch(() => undefined);
}
