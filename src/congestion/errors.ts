/**
 * Typed configuration errors for the congestion and clock modules.
 *
 * These are thrown only for caller misuse (bad configuration values), never for anything that
 * came off the wire. `code` is stable; `message` says what to change.
 */
import { AckwireError } from "../channels/errors.js";
export class CongestionConfigError extends AckwireError {
  constructor(message: string) {
    super("ERR_CONGESTION_CONFIG", message);
  }
}

/** Throws a CongestionConfigError unless `value` is a finite number within [min, max]. */
export function requireInRange(name: string, value: number, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    throw new CongestionConfigError(
      `${name} must be a finite number in [${min}, ${max}], got ${String(value)}; fix the config value`,
    );
  }
  return value;
}
