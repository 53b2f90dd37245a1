/**
 * Where a reward badge goes: beside its target's outline, never over the target or the page's
 * text. Tried in order: after it (right), before it (left), above, below; then above and below
 * squeezed onto the outline's border, centred on the target (just clear of the target itself
 * and of the text beyond); then past the text that shares its line (after it, before it). The first that fits the viewport and covers no
 * target, badge or text wins; else, of those that fit and leave every target free (or at least
 * its own), the one that covers the least text. Pure: boxes in, box out.
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

/** The area ``a`` and ``b`` share. */
function overlap(a: Box, b: Box): number {
  const w = Math.min(a.left + a.width, b.left + b.width) - Math.max(a.left, b.left);
  const h = Math.min(a.top + a.height, b.top + b.height) - Math.max(a.top, b.top);
  return w > 0 && h > 0 ? w * h : 0;
}

/**
 * The badge's box for a target whose outline is ``outline`` (the target grown by the outline's
 * border). ``taken``: the outlines of every target and the badges placed so far; ``text``: the
 * boxes of the page's text (one per line box of each text node); ``target``: the target's own
 * box inside the outline (default: the outline).
 */
export function placeBadge(
  outline: Box,
  badge: { width: number; height: number },
  viewport: { width: number; height: number },
  taken: readonly Box[],
  text: readonly Box[] = [],
  target: Box = outline,
): Box {
  const { width, height } = badge;
  const midY = outline.top + (outline.height - height) / 2;
  const row = { left: -1e9, top: midY, width: 2e9, height }; // the badge's line, edge to edge
  const onRow = text.filter((t) => intersects(t, row) && !intersects(t, outline));
  const after = onRow.filter((t) => t.left >= outline.left + outline.width);
  const before = onRow.filter((t) => t.left + t.width <= outline.left);
  const tries: Box[] = [
    { left: outline.left + outline.width + BADGE_GAP, top: midY, width, height },
    { left: outline.left - BADGE_GAP - width, top: midY, width, height },
    { left: outline.left, top: outline.top - BADGE_GAP - height, width, height },
    { left: outline.left, top: outline.top + outline.height + BADGE_GAP, width, height },
  ];
  // squeezed onto the outline's border: above and below, centred on the target, between it and
  // the nearest text in the badge's columns (when the spots beside the outline leave too
  // little room)
  const mid = Math.max(0, Math.min(target.left + (target.width - width) / 2, viewport.width - width));
  const columns = text.filter((t) => t.left < mid + width && mid < t.left + t.width);
  const floor = Math.min(
    ...columns.filter((t) => t.top >= target.top + target.height).map((t) => t.top),
    Infinity,
  );
  const ceiling = Math.max(
    ...columns.filter((t) => t.top + t.height <= target.top).map((t) => t.top + t.height),
    -Infinity,
  );
  const below = Math.min(outline.top + outline.height + BADGE_GAP, floor - height);
  const above = Math.max(outline.top - BADGE_GAP - height, ceiling);
  const tucked: Box[] = [];
  if (above + height <= target.top) tucked.push({ left: mid, top: above, width, height });
  if (below >= target.top + target.height) tucked.push({ left: mid, top: below, width, height });
  const others = taken.filter((t) => t !== outline);
  const tuckedFree = tucked.filter(
    (b) => inside(b, viewport) && !intersects(b, target) && !others.some((t) => intersects(b, t)),
  );
  if (after.length > 0) {
    const end = Math.max(...after.map((t) => t.left + t.width));
    tries.push({ left: end + BADGE_GAP, top: midY, width, height });
  }
  if (before.length > 0) {
    const start = Math.min(...before.map((t) => t.left));
    tries.push({ left: start - BADGE_GAP - width, top: midY, width, height });
  }
  const fits = (b: Box): boolean => inside(b, viewport);
  const covers = (b: Box): number => text.reduce((sum, t) => sum + overlap(b, t), 0);
  const isFree = (b: Box): boolean => fits(b) && !taken.some((t) => intersects(b, t));
  const clear = [...tries.slice(0, 4).filter(isFree), ...tuckedFree, ...tries.slice(4).filter(isFree)];
  const found = clear.find((b) => covers(b) === 0);
  if (found) return found;
  const fitting = tries.filter(fits);
  const free = fitting.filter(isFree);
  const own = free.length > 0 ? free : fitting.filter((b) => !intersects(b, outline));
  if (own.length > 0) return own.reduce((best, b) => (covers(b) < covers(best) ? b : best));
  // a target as large as the viewport: after it, off-screen rather than over its text
  return tries[0]!;
}
