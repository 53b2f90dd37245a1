/**
 * What a person reads for the wire's step index: one more than it (index 0 is "step 1").
 * The rule lives in protocol/steps.py; the overlay, side panel and popup use it through here.
 */
export function stepNumber(step: number): number {
  return step + 1;
}

/** "step N" for the wire's step index `step`. */
export function stepLabel(step: number): string {
  return `step ${stepNumber(step)}`;
}
