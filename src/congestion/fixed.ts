/**
 * Two trivial controllers behind the CongestionController interface:
 * - "fixed": paces at a configured byte rate with an optional fixed window; ignores loss and delay.
 *   For links whose capacity the application knows (LAN, a provisioned server link) and for tests.
 * - "none": no window, no pacing. Only for loopback benchmarks and trusted links: it will flood
 *   a real bottleneck.
 */
import type { CongestionController, SentPacket } from "./controller.js";
import { plainSentPacket } from "./controller.js";
import { requireInRange } from "./errors.js";
import { Pacer } from "./pacer.js";

export interface FixedConfig {
  /** Pacing rate in bits per second (default 1 Mbit/s). */
  rateBps?: number;
  /** Fixed window in bytes (default Infinity: pacing only). */
  windowBytes?: number;
  /** Bytes that may leave back to back after idle (default 10 * 1200). */
  burstBytes?: number;
}

export class FixedRateController implements CongestionController {
  readonly name = "fixed";
  private readonly rateBps: number;
  private readonly window: number;
  private readonly pacer: Pacer;

  constructor(config: FixedConfig = {}) {
    this.rateBps = requireInRange("rateBps", config.rateBps ?? 1_000_000, 1, 1e12);
    this.window = config.windowBytes === undefined ? Infinity : requireInRange("windowBytes", config.windowBytes, 1, 1e12);
    const burst = requireInRange("burstBytes", config.burstBytes ?? 12_000, 1, 1e12);
    this.pacer = new Pacer(burst, this.rateBps / 8 / 1000, burst);
  }

  onSent(now: number, bytes: number, inFlightBytes: number, out?: SentPacket): SentPacket {
    this.pacer.onSend(now, bytes);
    return plainSentPacket(now, bytes, inFlightBytes, out);
  }
  onAcks(): void {}
  onLoss(): void {}
  onAppLimited(): void {}
  canSend(inFlightBytes: number, bytes: number): boolean {
    return inFlightBytes + bytes <= this.window || inFlightBytes === 0;
  }
  nextSendTime(now: number): number {
    return this.pacer.nextSendTime(now);
  }
  windowBytes(): number {
    return this.window;
  }
  pacingRateBytesPerSec(): number {
    return this.rateBps / 8;
  }
  bandwidthEstimateBps(): number {
    return this.rateBps;
  }
}

export class NoController implements CongestionController {
  readonly name = "none";
  onSent(now: number, bytes: number, inFlightBytes: number, out?: SentPacket): SentPacket {
    return plainSentPacket(now, bytes, inFlightBytes, out);
  }
  onAcks(): void {}
  onLoss(): void {}
  onAppLimited(): void {}
  canSend(): boolean {
    return true;
  }
  nextSendTime(now: number): number {
    return now;
  }
  windowBytes(): number {
    return Infinity;
  }
  pacingRateBytesPerSec(): number {
    return Infinity;
  }
  bandwidthEstimateBps(): number {
    return 0;
  }
}
