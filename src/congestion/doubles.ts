/**
 * Plain arrays of unboxed doubles, the storage of the per-connection estimators' state.
 *
 * Why not class fields: V8 keeps a double-valued field in a heap box of its own, so an object
 * with twenty such fields is twenty-one small objects, and with 1,000 connections every one of
 * them is a cold cache line by the time the connection's next packet arrives. A packed double
 * array keeps the values inline and contiguous (8 per cache line). Why not a Float64Array: its
 * storage lives outside the JS heap beyond 64 bytes, one more indirection and a line far away.
 */

/** `size` copies of `value` as a packed array of unboxed doubles. */
export function doubleArray(size: number, value = 0): number[] {
  // A fractional first element fixes the elements kind at "double" before any value lands.
  const a = [0.5];
  a.length = 0;
  for (let i = 0; i < size; i++) a.push(value);
  // A copy: allocated in one piece at its exact size, the array object and its elements side
  // by side (the pushes grew the elements store in steps, each time somewhere else).
  return a.slice();
}

/**
 * `x`, as a small integer if it is one. For values read from a double array and stored in an
 * object's field: V8 returns such a read as a heap box (in unoptimized code), and a field that
 * once held a box keeps every later value in a box of its own, so each read of it is one more
 * cold cache line. The session keeps SentPacket records per packet; with the integral times
 * of a millisecond clock their fields then stay inline. (-0 becomes 0.)
 */
export function inlineInteger(x: number): number {
  const i = x | 0;
  return i === x ? i : x;
}
