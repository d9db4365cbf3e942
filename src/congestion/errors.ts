/**
 * Typed configuration errors for the congestion and clock modules.
 *
 * These are thrown only for caller misuse (bad configuration values), never for anything that
 * came off the wire. `code` is stable; `message` says what to change.
 */
export class CongestionConfigError extends Error {
  readonly code = "CONGESTION_CONFIG_INVALID";
  constructor(message: string) {
    super(message);
    this.name = "CongestionConfigError";
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
