/**
 * Which session each tab follows. Kept in `chrome.storage.session` so that a
 * restarted service worker resumes the sessions it was following.
 */
export interface TabSession {
  sessionId: string;
  intent: string;
  /** True for a demonstration recorded from the person's own actions. */
  demonstration: boolean;
  step: number;
  /** Page hook: the origin that started or attached the session; the tab's other origins get nothing. */
  origin?: string;
  /** Page hook: SHA-256 (hex) of the key the agent's page presented; every hook request repeats the key. */
  keyDigest?: string;
  /** Page hook: the key (from the daemon's hook.redeemed) of the MAC on this session's replies. */
  replyKey?: string;
  /** The operator's GETs that commit (`session.started.commits`): the gate holds them too. */
  commits?: string[];
}

const KEY = "tabSessions";

export class TabSessions {
  private map = new Map<number, TabSession>();
  /** Awaited after a tab's session is set or removed (the worker turns the tab's commit hold
   * on or off before the page hears its session started). */
  onChange: ((tabId: number) => Promise<void>) | null = null;

  private async changed(tabId: number): Promise<void> {
    await this.onChange?.(tabId).catch((err: unknown) => console.warn("webshepherd: tab session change", err));
  }

  async load(): Promise<void> {
    const got = await chrome.storage.session.get(KEY);
    this.map = new Map(Object.entries((got[KEY] ?? {}) as Record<string, TabSession>).map(([k, v]) => [Number(k), v]));
  }

  private async save(): Promise<void> {
    await chrome.storage.session.set({ [KEY]: Object.fromEntries(this.map) });
  }

  get(tabId: number): TabSession | undefined {
    return this.map.get(tabId);
  }

  /** Every tab that follows a session. */
  tabs(): number[] {
    return [...this.map.keys()];
  }

  tabsOf(sessionId: string): number[] {
    return [...this.map].filter(([, s]) => s.sessionId === sessionId).map(([t]) => t);
  }

  sessionIds(): string[] {
    return [...new Set([...this.map.values()].map((s) => s.sessionId))];
  }

  async set(tabId: number, s: TabSession): Promise<void> {
    this.map.set(tabId, s);
    await this.save();
    await this.changed(tabId);
  }

  async remove(tabId: number): Promise<void> {
    if (!this.map.delete(tabId)) return;
    await this.save();
    await this.changed(tabId);
  }
}
