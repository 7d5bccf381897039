/**
 * How deep template values may nest. JSON.parse accepts `[[[…]]]` 20,000
 * levels deep, but everything that walks such a value recursively — the
 * idempotency hash, Handlebars turning an array into text — overflows the
 * stack on it. Real template data is a few levels deep (an order, its lines,
 * their options), so values are refused past MAX_DATA_DEPTH levels while the
 * request is validated, before anything else looks at them.
 */

/** Arrays and objects inside one template value (`template_data.x`, a substitution). */
export const MAX_DATA_DEPTH = 32;

/** The first key of `record` whose value nests arrays or objects deeper than `max`, or undefined. Iterative. */
export function tooDeepKey(record: Record<string, unknown>, max = MAX_DATA_DEPTH): string | undefined {
  for (const [key, value] of Object.entries(record)) {
    if (nestsDeeperThan(value, max)) return key;
  }
  return undefined;
}

/** `[[1]]` nests 2 deep, a scalar 0. Walks with an explicit stack, so its own depth is no limit. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth + 1 > max) return true;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}
