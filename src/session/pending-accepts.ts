/**
 * Accept decisions in progress: a server's accept hook may answer with a promise (a database
 * look-up), and the handshake waits for it without holding a connection. Bounded in number
 * (`maxPendingAccepts`) and in time (`acceptTimeoutMs`); the Endpoint denies what passes either
 * bound. The client keeps resending its RESPONSE meanwhile; those repeats find the entry and
 * are ignored, so the hook runs once per handshake.
 *
 * Settling happens outside any drive call (a promise reaction): the reaction records the answer
 * and calls `wake` (the driver's service request); the Endpoint takes settled entries in its
 * next handleTimeout, which pollTimeout then reports due.
 */
import type { Address } from "./sans-io.js";
import type { ClientIdentity } from "../secure/server-security.js";

export interface PendingAccept {
  readonly key: string;
  readonly from: Address;
  readonly salt: number;
  readonly appVersion: number;
  readonly channelHash: number;
  readonly userData: Uint8Array;
  /** The secure layer's identity of the client that sent the RESPONSE (carried with it). */
  readonly identity: ClientIdentity | undefined;
  readonly deadline: number;
  /** "pending" until the promise settles (or the entry is dropped: timed out). */
  state: "pending" | "fulfilled" | "rejected" | "dropped";
  value: unknown;
}

export interface PendingAcceptFields {
  salt: number;
  appVersion: number;
  channelHash: number;
  userData: Uint8Array;
  identity?: ClientIdentity;
}

/** A deny given after a wait, repeated to the handshake's later RESPONSEs. */
interface Denied {
  readonly code: number;
  readonly userData: Uint8Array;
  readonly until: number;
}

export class PendingAccepts {
  /** By key, in arrival order: every entry has the same timeout, so the first is the oldest. */
  readonly #byKey = new Map<string, PendingAccept>();
  /**
   * Handshakes denied after a wait, for acceptTimeoutMs: a RESPONSE the client resent before
   * the DENY reached it gets the same deny again instead of a second run of the hook (which
   * could accept a client that already gave up). In arrival order, at most `max` entries.
   */
  readonly #denied = new Map<string, Denied>();
  #settled: PendingAccept[] = [];
  readonly #max: number;
  readonly #timeoutMs: number;
  readonly #wake: (() => void) | undefined;

  constructor(max: number, timeoutMs: number, wake: (() => void) | undefined) {
    this.#max = max;
    this.#timeoutMs = timeoutMs;
    this.#wake = wake;
  }

  get size(): number {
    return this.#byKey.size;
  }

  /** The handshake `from` + `salt` (a repeat of its RESPONSE) is waiting for its decision. */
  has(from: Address, salt: number): boolean {
    return this.#byKey.size > 0 && this.#byKey.has(keyOf(from, salt));
  }

  /** Remembers that the waited-for handshake `entry` was denied with `code` and `userData`. */
  denied(now: number, entry: PendingAccept, code: number, userData: Uint8Array): void {
    if (this.#denied.size >= this.#max) this.#denied.delete(this.#denied.keys().next().value!);
    this.#denied.set(entry.key, { code, userData, until: now + this.#timeoutMs });
  }

  /** The deny to repeat to this handshake's RESPONSE, if it was denied after a wait lately. */
  deniedBefore(now: number, from: Address, salt: number): { code: number; userData: Uint8Array } | undefined {
    if (this.#denied.size === 0) return undefined;
    for (const [key, d] of this.#denied) {
      if (d.until > now) break;
      this.#denied.delete(key);
    }
    return this.#denied.get(keyOf(from, salt));
  }

  get full(): boolean {
    return this.#byKey.size >= this.#max;
  }

  /** Waits for `answer` on behalf of the handshake; the caller checked `full` first. */
  add(now: number, from: Address, fields: PendingAcceptFields, answer: PromiseLike<unknown>): void {
    const key = keyOf(from, fields.salt);
    const entry: PendingAccept = {
      key,
      from,
      salt: fields.salt,
      appVersion: fields.appVersion,
      channelHash: fields.channelHash,
      userData: fields.userData.slice(),
      identity: fields.identity,
      deadline: now + this.#timeoutMs,
      state: "pending",
      value: undefined,
    };
    this.#byKey.set(key, entry);
    const settle = (state: "fulfilled" | "rejected", value: unknown): void => {
      if (entry.state !== "pending") return;
      entry.state = state;
      entry.value = value;
      this.#settled.push(entry);
      this.#wake?.();
    };
    try {
      answer.then(
        (value) => settle("fulfilled", value),
        (error: unknown) => settle("rejected", error),
      );
    } catch (error) {
      // A thenable whose then() throws: as a rejection.
      settle("rejected", error);
    }
  }

  /** The earliest time something is due: now when an answer waits, else the oldest deadline. */
  nextDeadline(now: number): number | undefined {
    if (this.#settled.length > 0) return now;
    for (const entry of this.#byKey.values()) return entry.deadline;
    return undefined;
  }

  /** Answers that came in, oldest first (each leaves the table). */
  takeSettled(): PendingAccept[] {
    if (this.#settled.length === 0) return NONE;
    const settled = this.#settled;
    this.#settled = [];
    for (const entry of settled) this.#byKey.delete(entry.key);
    return settled;
  }

  /** Entries past their deadline (each leaves the table; its later answer is ignored). */
  takeExpired(now: number): PendingAccept[] {
    let expired: PendingAccept[] | undefined;
    for (const entry of this.#byKey.values()) {
      if (entry.deadline > now) break;
      entry.state = "dropped";
      (expired ??= []).push(entry);
    }
    if (expired === undefined) return NONE;
    for (const entry of expired) this.#byKey.delete(entry.key);
    return expired;
  }
}

const NONE: PendingAccept[] = [];

function keyOf(from: Address, salt: number): string {
  return `${from}#${salt}`;
}

/** Whether an accept hook's answer is a promise (any thenable). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";
}
