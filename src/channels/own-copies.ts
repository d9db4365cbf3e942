/**
 * Which kind of buffer a small copy (a message sent or received, internal to src/channels) is
 * cheapest in, by JavaScript engine. On JavaScriptCore (Bun) a small typed array of its own
 * (`slice()`) lives in the GC heap and costs about as much as creating one view of an existing
 * buffer (~60 ns for 100 B against ~55 ns per view); a view over a fresh ArrayBuffer costs
 * several times that. On V8 (Node, Deno) any buffer over 64 bytes is an off-heap allocation
 * (~350 ns for 100 B; more in GC), so there small copies share buffers: pooled send buffers
 * (buffer-pool.ts) and one buffer per datagram's run of received messages (receive-copy.ts).
 * Read once (`globalThis.Bun`, as src/index.ts does): the engine does not change while the
 * process runs.
 */
let own = (globalThis as { Bun?: unknown }).Bun !== undefined;

/** Small copies get buffers of their own (true on Bun). */
export function ownSmallCopies(): boolean {
  return own;
}

/**
 * @internal For tests: choose the strategy (true: a buffer per copy). Send channels read it
 * when they are created; the receive copy reads it per message. Returns the previous choice.
 */
export function setOwnSmallCopies(on: boolean): boolean {
  const was = own;
  own = on;
  return was;
}
