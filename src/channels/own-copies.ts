/**
 * Which kind of buffer a received message's copy (receive-copy.ts) is cheapest in, by JavaScript
 * engine. On JavaScriptCore (Bun) a small typed array of its own (`slice()`) lives in the GC
 * heap and costs about as much as creating one view of an existing buffer (~60 ns for 100 B
 * against ~55 ns per view), so each message gets its own. On V8 (Node, Deno) any buffer over 64
 * bytes is an off-heap allocation (~350 ns for 100 B, more in GC), so there messages of 65..1024
 * bytes are carved from a process-wide slab (receive-copy.ts). (Sent messages use the pooled buffers of buffer-pool.ts on both: a
 * reused pooled buffer costs less than either.) Read once (`globalThis.Bun`, as src/index.ts
 * does): the engine does not change while the process runs.
 */
let own = (globalThis as { Bun?: unknown }).Bun !== undefined;

/** Received messages get buffers of their own (true on Bun). */
export function ownSmallCopies(): boolean {
  return own;
}

/** @internal For tests: choose the strategy (true: a buffer per message). Returns the previous choice. */
export function setOwnSmallCopies(on: boolean): boolean {
  const was = own;
  own = on;
  return was;
}
