/**
 * A tab a held tab opens is held from the moment the browser names its opener
 * (webNavigation.onCreatedNavigationTarget), which comes after the tab's first navigation has
 * begun: that navigation can leave first. So while any tab is held, a navigation that a page
 * on a held tab's host started in a tab nobody has settled yet is blocked (one
 * declarativeNetRequest session rule; the browser's own navigations, which have no initiator,
 * are not): the tabs there when the hold began are settled, a new tab when the gate holds it,
 * when its opener is not held, or SETTLE_MS after it appeared. A blocked GET (a link, a
 * `window.open` page) is navigated again once the tab is held, so it is held like any other;
 * a blocked POST (a `target=_blank` form) cannot be sent again as it was: it is refused, and the
 * page that opened it is told why (NEW_TAB_POST_REFUSED).
 */

/** Why a POST into a new tab was not sent (the opener's overlay says it). */
export const NEW_TAB_POST_REFUSED =
  "a form posting into a new tab leaves before the extension can hold that tab, so it is refused, not held; the tab's later requests are held";

/** The rule's id (this extension's only session rule). */
export const RULE_ID = 4901;
/** How long a tab that a page opened stays unsettled, waiting for the browser to name its opener. */
export const SETTLE_MS = 2_000;

/** The rule: navigations that pages on `hosts` start, in every tab but the settled ones, are blocked. */
export function blockRule(settled: Iterable<number>, hosts: Iterable<string>): chrome.declarativeNetRequest.Rule {
  return {
    id: RULE_ID,
    priority: 1,
    action: { type: "block" as chrome.declarativeNetRequest.RuleActionType },
    condition: {
      resourceTypes: ["main_frame" as chrome.declarativeNetRequest.ResourceType],
      initiatorDomains: [...new Set(hosts)].sort(),
      excludedTabIds: [...settled].sort((a, b) => a - b),
    },
  };
}

export class NewTabGuard {
  private readonly settled = new Set<number>();
  /** The hosts of the held tabs' pages (whose pages open the tabs this guards). */
  private hosts: string[] = [];
  private active = false;
  private updating: Promise<void> = Promise.resolve();

  /** The held tabs now (none: off); the tabs there when it goes on are settled. */
  async holding(held: number[]): Promise<void> {
    const on = held.length > 0;
    if (on && !this.active) {
      for (const tab of await chrome.tabs.query({})) if (tab.id !== undefined) this.settled.add(tab.id);
    }
    const urls = await Promise.all(held.map((tab) => chrome.tabs.get(tab).then((t) => t.url ?? t.pendingUrl ?? "", () => "")));
    const hosts = [...new Set(urls.map(hostOf).filter((h): h is string => h !== null))].sort();
    if (on === this.active && hosts.join(" ") === this.hosts.join(" ")) return;
    this.active = on && hosts.length > 0;
    this.hosts = hosts;
    await this.update();
  }

  /** A tab appeared: one no held tab opened is settled at once, another after SETTLE_MS at most. */
  created(tabId: number, openerHeld: boolean): void {
    if (!openerHeld) return void this.settle(tabId);
    setTimeout(() => void this.settle(tabId), SETTLE_MS);
  }

  /** The tab's navigations go unblocked from now on (held by the gate, or not a held tab's). */
  async settle(tabId: number): Promise<void> {
    if (this.settled.has(tabId)) return;
    this.settled.add(tabId);
    if (this.active) await this.update();
  }

  /** Whether the tab is still unsettled (its navigations are blocked while a tab is held). */
  blocks(tabId: number): boolean {
    return this.active && !this.settled.has(tabId);
  }

  removed(tabId: number): void {
    this.settled.delete(tabId);
  }

  private update(): Promise<void> {
    const rules = this.active ? [blockRule(this.settled, this.hosts)] : [];
    this.updating = this.updating
      .then(() => chrome.declarativeNetRequest.updateSessionRules({ removeRuleIds: [RULE_ID], addRules: rules }))
      .catch((err) => console.warn("webshepherd: the new-tab rule", err));
    return this.updating;
  }
}

/** A page URL's host as the rule's initiatorDomains names it (null: not a web page). */
export function hostOf(url: string): string | null {
  try {
    const u = new URL(url);
    return u.protocol === "http:" || u.protocol === "https:" ? u.hostname.replace(/^\[|\]$/g, "") : null;
  } catch {
    return null;
  }
}
