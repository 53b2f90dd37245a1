/**
 * Where a reward badge goes: beside its target's outline, never over the target. Tried in
 * order: after it (right), before it (left), above, below; the first that fits the viewport
 * and covers no target or badge already placed wins, else the first that fits and leaves its
 * own target free. Pure: boxes in, box out.
 */
export interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** Space between a target's outline and its badge, in CSS pixels. */
export const BADGE_GAP = 2;

export function grow(b: Box, by: number): Box {
  return { left: b.left - by, top: b.top - by, width: b.width + 2 * by, height: b.height + 2 * by };
}

export function intersects(a: Box, b: Box): boolean {
  return a.left < b.left + b.width && b.left < a.left + a.width && a.top < b.top + b.height && b.top < a.top + a.height;
}

function inside(b: Box, viewport: { width: number; height: number }): boolean {
  return b.left >= 0 && b.top >= 0 && b.left + b.width <= viewport.width && b.top + b.height <= viewport.height;
}

/**
 * The badge's box for a target whose outline is ``outline`` (the target grown by the outline's
 * border). ``taken``: the outlines of every target and the badges placed so far.
 */
export function placeBadge(
  outline: Box,
  badge: { width: number; height: number },
  viewport: { width: number; height: number },
  taken: readonly Box[],
): Box {
  const { width, height } = badge;
  const midY = outline.top + (outline.height - height) / 2;
  const tries: Box[] = [
    { left: outline.left + outline.width + BADGE_GAP, top: midY, width, height },
    { left: outline.left - BADGE_GAP - width, top: midY, width, height },
    { left: outline.left, top: outline.top - BADGE_GAP - height, width, height },
    { left: outline.left, top: outline.top + outline.height + BADGE_GAP, width, height },
  ];
  const fitting = tries.filter((b) => inside(b, viewport));
  const free = fitting.find((b) => !taken.some((t) => intersects(b, t)));
  if (free) return free;
  const own = fitting.find((b) => !intersects(b, outline));
  if (own) return own;
  // a target as large as the viewport: after it, off-screen rather than over its text
  return tries[0]!;
}
