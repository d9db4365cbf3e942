/**
 * "Did you mean" for option keys: a key nobody reads is refused rather than ignored, since an
 * ignored option silently leaves its default in force (a typo such as `maxConections` or
 * `redundnacy`). Shared by listen()/connect() (src/api/options.ts) and channel configs
 * (src/channels/channel-set.ts).
 */
import { closestKey } from "./nearest-key.js";

export { closestKey };

/** The first key of `options` (with a value other than undefined) that `known` lacks, if any. */
export function firstUnknownKey(options: object, known: ReadonlySet<string>): string | undefined {
  for (const key of Object.keys(options)) {
    if (!known.has(key) && (options as Record<string, unknown>)[key] !== undefined) return key;
  }
  return undefined;
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
