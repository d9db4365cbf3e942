/**
 * "Did you mean" for option keys: a key nobody reads is refused rather than ignored, since an
 * ignored option silently leaves its default in force (a typo such as `maxConections` or
 * `redundnacy`). Shared by listen()/connect() (src/api/options.ts) and channel configs
 * (src/channels/channel-set.ts).
 */

/** Levenshtein distance of two short strings, case-insensitive. */
function distance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

/** The first key of `options` (with a value other than undefined) that `known` lacks, if any. */
export function firstUnknownKey(options: object, known: ReadonlySet<string>): string | undefined {
  for (const key of Object.keys(options)) {
    if (!known.has(key) && (options as Record<string, unknown>)[key] !== undefined) return key;
  }
  return undefined;
}

/** The known key within 2 edits of `key` (the nearest), or undefined. */
export function closestKey(key: string, known: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    const d = distance(key, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

/**
 * `${where}: unknown option "key" (did you mean "…"?); ${listLabel} a, b, c`: the message both
 * refusals give. `hint` replaces the "did you mean" when the caller knows better (the key is
 * another call's option).
 */
export function unknownOptionMessage(where: string, key: string, known: readonly string[], listLabel: string, hint?: string): string {
  const best = hint === undefined ? closestKey(key, known) : undefined;
  const why = hint ?? (best !== undefined ? ` (did you mean "${best}"?)` : "");
  return `${where}: unknown option ${JSON.stringify(key)}${why}; ${listLabel} ${known.join(", ")}`;
}
