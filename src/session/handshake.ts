/**
 * The connection handshake, docs/PROTOCOL.md §4, in one file:
 *
 *   client                                   server
 *   CONNECT_REQUEST (256 B, salt) ---------> (rate limit; versions) no state kept
 *            <----------------------------- CHALLENGE (25 B): salt, cookie
 *   CONNECT_RESPONSE (salt, cookie, ...) --> cookie checked for this and the previous window;
 *                                            versions, channel hash, limits, accept hook;
 *                                            only now a connection slot is allocated
 *            <----------------------------- ACCEPT (sessionId, userData) or DENY (reason)
 *
 * cookie = SipHash-2-4-128(secret, address || clientSalt || window), window = floor(now / W).
 * The secret is drawn from the endpoint's secret (EndpointConfig.secret). Nothing about an address is stored before a
 * response carrying a cookie only that address could have received (anti-spoofing), and every
 * reply to an unvalidated address is smaller than the request it answers (anti-amplification:
 * the request is padded to 256 bytes, a CHALLENGE is 25 and a DENY without user data 12).
 *
 * This file holds the client's side; the server's is ./server-handshake.ts, the packets' bytes
 * src/wire/control.ts and src/wire/control-server.ts.
 */
import { encodeRequest, encodeResponse, type ChallengeFields } from "../wire/control.js";
import { cookiesEqual } from "./cookie.js";
import type { DenyReason } from "./types.js";

const DENY_NAMES: Record<number, DenyReason> = {
  1: "server-full",
  2: "version-mismatch",
  3: "channel-mismatch",
  4: "refused",
  5: "rate-limited",
};

export function denyReasonName(code: number): DenyReason {
  return DENY_NAMES[code] ?? "refused";
}

// ---- the client's attempt ----------------------------------------------------------------------

export const enum AttemptPhase {
  /** Sending CONNECT_REQUEST until a CHALLENGE arrives. */
  Request = 0,
  /** Sending CONNECT_RESPONSE until ACCEPT or DENY. */
  Response = 1,
}

/**
 * Client-side handshake state. Resends with exponential backoff (initial, x2, capped) until
 * the connection's connect timeout; the connection owns the timers.
 */
export class ClientAttempt {
  phase = AttemptPhase.Request;
  cookie: Uint8Array | undefined;
  sends = 0;
  /** When the next (re)send is due. */
  nextSendAt: number;
  /** When the current phase's first packet left (NaN before it). */
  firstSentAt = NaN;
  /**
   * The round trip of a request sent once and answered by a CHALLENGE, or NaN. A resent
   * request's answer cannot say which copy it answers (Karn), so that one is not timed.
   */
  challengeRttMs = NaN;

  constructor(
    readonly salt: number,
    readonly userData: Uint8Array,
    now: number,
    private readonly initialResendMs: number,
    private readonly maxResendMs: number,
  ) {
    this.nextSendAt = now;
  }

  /** A CHALLENGE for this attempt arrived: switch to sending responses, at once. */
  onChallenge(now: number, fields: ChallengeFields): boolean {
    if (fields.salt !== this.salt) return false;
    if (this.phase === AttemptPhase.Response && this.cookie !== undefined && cookiesEqual(this.cookie, 0, fields.cookie, 0)) {
      return false; // a duplicate: the response already went out
    }
    if (this.phase === AttemptPhase.Request && this.sends === 1) this.challengeRttMs = now - this.firstSentAt;
    this.phase = AttemptPhase.Response;
    this.cookie = fields.cookie;
    this.sends = 0;
    this.nextSendAt = now;
    return true;
  }

  /** Call after each send: schedules the next one with backoff. */
  onSent(now: number): void {
    const delay = Math.min(this.maxResendMs, this.initialResendMs * 2 ** Math.min(this.sends, 16));
    if (this.sends === 0) this.firstSentAt = now;
    this.sends++;
    this.nextSendAt = now + delay;
  }

  /**
   * The handshake's RTT sample when the ACCEPT arrives at `now` (RFC 9002 §5.2: the first
   * sample may come from the handshake): the request's round trip, or else the response's if it
   * was sent once; NaN if every packet was resent. The request's is preferred: the server
   * answers it statelessly at once, while a response waits for the application's accept hook.
   */
  rttSampleOnAccept(now: number): number {
    if (!Number.isNaN(this.challengeRttMs)) return this.challengeRttMs;
    return this.phase === AttemptPhase.Response && this.sends === 1 ? now - this.firstSentAt : NaN;
  }

  /** Write the packet due now; returns the length before the CRC. */
  encode(b: Uint8Array, at: number, appVersion: number, channelHash: number): number {
    if (this.phase === AttemptPhase.Request || this.cookie === undefined) return encodeRequest(b, at, appVersion, this.salt);
    return encodeResponse(b, at, this.salt, this.cookie, appVersion, channelHash, this.userData);
  }
}
