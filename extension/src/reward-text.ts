/** The one way a reward is written in the extension (overlay, badges, cards, side panel):
 * two decimals, "n/a" when the judge's verdict did not parse. */
export function rewardText(r: number | null | undefined): string {
  return r === null || r === undefined || !Number.isFinite(r) ? "n/a" : r.toFixed(2);
}
