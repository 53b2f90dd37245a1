/**
 * The elements' boxes on the screenshot, sent with an observation so a report can outline
 * candidates' targets: bid -> [left, top, width, height] in screenshot pixels (the CSS-pixel
 * viewport boxes of the extra properties times the device pixel ratio).
 */
import type { ExtraProperties } from "../axtree/types.js";

export const MAX_BOXES = 20_000;

type Box = [number, number, number, number];

export function screenshotBoxes(props: ExtraProperties, scale: number): Record<string, Box> {
  const out: Record<string, Box> = {};
  let n = 0;
  for (const [bid, p] of Object.entries(props)) {
    const b = p.bbox;
    if (!b || b.length !== 4 || !(p.visibility > 0)) continue;
    const [x, y, w, h] = b as Box;
    if (![x, y, w, h].every(Number.isFinite) || w <= 0 || h <= 0) continue;
    const px = (v: number) => Math.round(v * scale * 10) / 10;
    out[bid] = [px(x), px(y), px(w), px(h)];
    if (++n >= MAX_BOXES) break;
  }
  return out;
}
