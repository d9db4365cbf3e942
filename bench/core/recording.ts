/**
 * The live run's server inputs, as bench:core records them for the replay (server-replay.ts):
 * per turn, a 14-byte head (u32 now, u32 app tick, u8 appSends, u8 timed, u32 batch length)
 * and the packed batch of the datagrams the server received in that turn.
 */
export const TURN_HEAD_BYTES = 14;

export interface RecordedTurn {
  now: number;
  tick: number;
  appSends: boolean;
  timed: boolean;
  deliveries: Uint8Array;
}

export function encodeTurn(t: RecordedTurn): Uint8Array {
  const out = new Uint8Array(TURN_HEAD_BYTES + t.deliveries.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, t.now, true);
  view.setUint32(4, t.tick, true);
  out[8] = t.appSends ? 1 : 0;
  out[9] = t.timed ? 1 : 0;
  view.setUint32(10, t.deliveries.length, true);
  out.set(t.deliveries, TURN_HEAD_BYTES);
  return out;
}

/** The turns of a recording, in order; `deliveries` are views of `bytes`. */
export function* decodeTurns(bytes: Uint8Array): Generator<RecordedTurn> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let pos = 0; pos + TURN_HEAD_BYTES <= bytes.length; ) {
    const length = view.getUint32(pos + 10, true);
    yield {
      now: view.getUint32(pos, true),
      tick: view.getUint32(pos + 4, true),
      appSends: bytes[pos + 8] === 1,
      timed: bytes[pos + 9] === 1,
      deliveries: bytes.subarray(pos + TURN_HEAD_BYTES, pos + TURN_HEAD_BYTES + length),
    };
    pos += TURN_HEAD_BYTES + length;
  }
}

/** What a kept recording (core.js --keep-recording) needs beside it to be replayed by ab.ts. */
export interface RecordingSidecar {
  /** The scenario options the live server ran with (the replaying servers get the same). */
  options: import("./scenario.js").ScenarioOptions;
  /** Simulated seconds of the timed (traffic) phase. */
  simSeconds: number;
  /** The live server's output hash and messages received: a replay that matches them did the same work. */
  outputHash: number;
  messagesIn: number;
  quick: boolean;
}
