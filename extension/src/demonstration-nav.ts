/**
 * Demonstrations: which BrowserGym action a committed top-frame navigation is.
 * Link clicks and form submissions are already recorded as the click / press that
 * caused them; reloads are not actions. Back and forward are told apart by the tab's
 * own history of committed URLs.
 */
import { goBack, goForward, goto } from "./action-strings.js";

export class NavHistory {
  urls: string[] = [];
  pos = -1;

  /** The action for a navigation committed to `url`, or null when it is none (and the history is updated). */
  commit(url: string, transitionType: string, qualifiers: readonly string[]): string | null {
    if (qualifiers.includes("forward_back")) {
      if (this.pos > 0 && this.urls[this.pos - 1] === url) {
        this.pos--;
        return goBack();
      }
      if (this.urls[this.pos + 1] === url) {
        this.pos++;
        return goForward();
      }
      this.push(url);
      return goBack();
    }
    if (transitionType === "reload") return null;
    if (this.urls[this.pos] === url && transitionType !== "typed") return null; // same page again (e.g. a redirect to itself)
    this.push(url);
    const typed = ["typed", "auto_bookmark", "generated", "keyword", "keyword_generated"].includes(transitionType) || qualifiers.includes("from_address_bar");
    return typed ? goto(url) : null;
  }

  /** The page the demonstration starts on (no action). */
  start(url: string): void {
    this.urls = [url];
    this.pos = 0;
  }

  private push(url: string) {
    this.urls = [...this.urls.slice(0, this.pos + 1), url];
    this.pos = this.urls.length - 1;
  }
}
