// Transport-independent scenario drivers: windowed throughput and ping-pong.
//
// Every transport under test (raw UDP, TCP, a peer library, later ackwire) is wrapped as a
// MessagePair: two connected endpoints A and B in this one process. The drivers only see
// "send this message A->B / B->A" and "a message arrived at A / B", so every transport runs
// exactly the same traffic pattern and the same payload verification.

import { checkPayload, fillPayload, readU32, writeU32 } from "../lib/payload.js";
import { cdfPoints, percentileSorted, round, sortedCopy } from "../lib/stats.js";
import { g, nowMs, sleep } from "../lib/host.js";

/** Marks the one stdout line of a scenario process that carries its JSON result. */
export const RESULT_PREFIX = "E2E_RESULT ";

export type ImplKind = "kernel" | "native" | "wasm-or-asm.js" | "pure JS";

export interface MessagePair {
  /** Reliable transports must deliver every message exactly once, in order. */
  readonly reliable: boolean;
  /** False if the transport may still read a message's bytes after send() returns. */
  readonly copiesOnSend: boolean;
  /** Set by the driver; called with a view that is valid only during the call. */
  onA: (msg: Uint8Array) => void;
  onB: (msg: Uint8Array) => void;
  sendAtoB(msg: Uint8Array): void;
  sendBtoA(msg: Uint8Array): void;
  /** Called after a burst of sends: push batched/corked data out now. */
  flush(): void;
  close(): Promise<void>;
}

export interface ThroughputOptions {
  size: number;
  /** Messages allowed in flight (sent, not yet acknowledged by the app-level ack). */
  window: number;
  /** B sends a cumulative ack after this many received messages. */
  ackEvery: number;
  durationMs: number;
  warmupMs: number;
  /** Also record each message's delivery latency (send() call to B's verified receipt). */
  recordLatency?: boolean;
}

export interface ThroughputResult {
  messagesPerSec: number;
  mbPerSec: number;
  delivered: number;
  sent: number;
  corrupt: number;
  outOfOrder: number;
  /** Windows given up after no ack progress (unreliable transports only: loss). */
  stalls: number;
  verified: boolean;
  /** With `recordLatency`: delivery latencies (ms) of messages received after the warm-up. */
  latenciesMs?: number[];
}

/** B's cumulative ack: u32 ACK_TAG, u32 messages received (also the stall harness's, test/congestion-sim). */
export const ACK_SIZE = 8;
export const ACK_TAG = 0x4b434140; // "@ACK": distinguishes an ack from a data payload's header

/**
 * A streams self-checking messages to B, never more than `window` beyond the last ack.
 * B verifies each message and acks cumulatively (highest sequence seen + 1) every
 * `ackEvery` messages. Counting starts after the warm-up.
 */
export function runThroughput(pair: MessagePair, opt: ThroughputOptions): Promise<ThroughputResult> {
  return new Promise((resolve, reject) => {
    const poolSize = opt.window * 4;
    const pool: Uint8Array[] = [];
    if (pair.copiesOnSend) {
      for (let i = 0; i < poolSize; i++) pool.push(new Uint8Array(opt.size));
    }
    const ackBuf = new Uint8Array(ACK_SIZE);
    // Send times by sequence, in a ring: never more than `window` messages are unacknowledged,
    // so a slot is reused only after its message has been delivered (reliable carriers).
    const sentAt = opt.recordLatency ? new Float64Array(poolSize) : undefined;
    const latencies: number[] = [];
    let sent = 0;
    let acked = 0;
    let stopped = false;
    let pumping = false;

    let received = 0;
    let nextExpected = 0;
    let corrupt = 0;
    let outOfOrder = 0;
    let sinceAck = 0;
    let stalls = 0;

    let warmCount = -1;
    let warmAt = 0;

    const pump = (): void => {
      if (pumping || stopped) return;
      pumping = true;
      try {
        let n = 0;
        while (sent - acked < opt.window && n < opt.window) {
          const buf = pair.copiesOnSend ? pool[sent % poolSize] : new Uint8Array(opt.size);
          fillPayload(buf, sent);
          if (sentAt !== undefined) sentAt[sent % poolSize] = nowMs();
          pair.sendAtoB(buf);
          sent++;
          n++;
        }
        if (n > 0) pair.flush();
      } catch (err) {
        finish(err);
      } finally {
        pumping = false;
      }
    };

    pair.onA = (msg) => {
      if (msg.length !== ACK_SIZE || readU32(msg, 0) !== ACK_TAG) return;
      const upTo = readU32(msg, 4);
      if (upTo > acked) {
        acked = upTo;
        lastProgress = nowMs();
      }
      pump();
    };

    pair.onB = (msg) => {
      const seq = checkPayload(msg);
      if (seq < 0 || msg.length !== opt.size) {
        corrupt++;
        return;
      }
      if (seq !== nextExpected) {
        if (pair.reliable || seq < nextExpected) outOfOrder++;
      }
      if (seq >= nextExpected) nextExpected = seq + 1;
      received++;
      if (sentAt !== undefined && warmCount >= 0) latencies.push(nowMs() - sentAt[seq % poolSize]);
      if (++sinceAck >= opt.ackEvery) {
        sinceAck = 0;
        writeU32(ackBuf, 0, ACK_TAG);
        writeU32(ackBuf, 4, nextExpected);
        pair.sendBtoA(ackBuf);
        pair.flush();
      }
    };

    // An unreliable carrier can lose a datagram or an ack; then the window never reopens.
    // After 20 ms without progress the in-flight messages are written off as lost.
    let lastProgress = nowMs();
    const watchdog = g.setInterval(() => {
      if (stopped) return;
      const t = nowMs();
      if (warmCount < 0 && t >= start + opt.warmupMs) {
        warmCount = received;
        warmAt = t;
      }
      if (!pair.reliable && sent > acked && t - lastProgress > 20) {
        acked = sent;
        lastProgress = t;
        stalls++;
        pump();
      }
    }, 5);

    const start = nowMs();
    const finish = (err?: unknown): void => {
      if (stopped) return;
      stopped = true;
      g.clearInterval(watchdog);
      g.clearTimeout(endTimer);
      if (err !== undefined) {
        reject(err);
        return;
      }
      const end = nowMs();
      const fromCount = warmCount < 0 ? 0 : warmCount;
      const fromTime = warmCount < 0 ? start : warmAt;
      const seconds = (end - fromTime) / 1000;
      const delivered = received - fromCount;
      const mps = delivered / seconds;
      resolve({
        messagesPerSec: Math.round(mps),
        mbPerSec: round((mps * opt.size) / 1e6, 2),
        delivered: received,
        sent,
        corrupt,
        outOfOrder,
        stalls,
        verified: corrupt === 0 && (!pair.reliable || outOfOrder === 0) && received > 0,
        ...(sentAt !== undefined ? { latenciesMs: latencies } : {}),
      });
    };
    const endTimer = g.setTimeout(() => finish(), opt.warmupMs + opt.durationMs);
    pump();
  });
}

export interface PingOptions {
  size: number;
  count: number;
  warmup: number;
  maxMs: number;
  /** Give up on one ping after this long (unreliable carriers may lose one). */
  lossTimeoutMs: number;
}

export interface PingResult {
  p50Us: number;
  p99Us: number;
  samples: number;
  lost: number;
  corrupt: number;
  /** 101 points, p0..p100, microseconds. */
  cdfUs: number[];
}

/** A sends one message, B echoes it, A checks it and sends the next. */
export function runPing(pair: MessagePair, opt: PingOptions): Promise<PingResult> {
  return new Promise((resolve, reject) => {
    const rtts: number[] = [];
    const buf = new Uint8Array(opt.size);
    let seq = 0;
    let sentAt = 0;
    let lost = 0;
    let corrupt = 0;
    let done = false;
    const start = nowMs();

    const sendNext = (): void => {
      if (done) return;
      if (rtts.length >= opt.count || nowMs() - start > opt.maxMs) {
        finish();
        return;
      }
      const out = pair.copiesOnSend ? buf : new Uint8Array(opt.size);
      fillPayload(out, seq);
      sentAt = nowMs();
      try {
        pair.sendAtoB(out);
        pair.flush();
      } catch (err) {
        finish(err);
      }
    };

    pair.onB = (msg) => {
      // Echo needs its own copy: the view is only valid during this call.
      const echo = msg.slice();
      pair.sendBtoA(echo);
      pair.flush();
    };
    pair.onA = (msg) => {
      const t = nowMs();
      const got = checkPayload(msg);
      if (got < 0 || msg.length !== opt.size) {
        corrupt++;
        return;
      }
      if (got !== seq) return; // a late echo of a ping already written off
      // Warm-up ends after `warmup` pings or a fifth of the time budget, whichever is first
      // (a transport serviced on a millisecond timer would otherwise spend it all warming).
      if (seq >= opt.warmup || t - start > opt.maxMs / 5) rtts.push((t - sentAt) * 1000);
      seq++;
      sendNext();
    };

    const watchdog = g.setInterval(() => {
      if (done) return;
      if (nowMs() - sentAt > opt.lossTimeoutMs) {
        lost++;
        seq++;
        sendNext();
      }
      if (nowMs() - start > opt.maxMs + 1000) finish();
    }, Math.max(1, Math.floor(opt.lossTimeoutMs / 2)));

    const finish = (err?: unknown): void => {
      if (done) return;
      done = true;
      g.clearInterval(watchdog);
      if (err !== undefined) {
        reject(err);
        return;
      }
      const sorted = sortedCopy(rtts);
      resolve({
        p50Us: round(percentileSorted(sorted, 50), 1),
        p99Us: round(percentileSorted(sorted, 99), 1),
        samples: sorted.length,
        lost,
        corrupt,
        cdfUs: cdfPoints(sorted),
      });
    };
    sendNext();
  });
}

/** Scenario settings; `quick` keeps each measurement well under a second. */
export function scenarioSettings(quick: boolean): {
  durationMs: number;
  warmupMs: number;
  pingCount: number;
  pingMaxMs: number;
} {
  return quick
    ? { durationMs: 600, warmupMs: 150, pingCount: 3000, pingMaxMs: 800 }
    : { durationMs: 2500, warmupMs: 400, pingCount: 20000, pingMaxMs: 3000 };
}

// ---- running one measurement on a fresh pair (every group and the paired ratios) ------------

export function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

/** `p`, or a rejection naming `what` after `ms`. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = g.setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
    p.then(
      (v) => (g.clearTimeout(t), resolve(v)),
      (e: unknown) => (g.clearTimeout(t), reject(e)),
    );
  });
}

/**
 * Opens a pair (at most 5 s), runs one measurement on it (at most `budgetMs`), closes it (at
 * most `closeMs`, a close that hangs is abandoned) and waits 20 ms, so the last datagrams of
 * this pair drain before the next one opens.
 */
export async function onFreshPair<T>(
  make: () => Promise<MessagePair>,
  run: (p: MessagePair) => Promise<T>,
  budgetMs: number,
  what: string,
  closeMs = 3000,
): Promise<T> {
  const pair = await withTimeout(make(), 5000, `${what}: connect`);
  try {
    return await withTimeout(run(pair), budgetMs, what);
  } finally {
    await withTimeout(pair.close(), closeMs, `${what}: close`).catch(() => {});
    await sleep(20);
  }
}
