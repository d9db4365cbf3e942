/**
 * Typed errors for misuse of the channel API by its caller (the application, through the
 * connection). Off-the-wire problems are never thrown: they are counted and dropped.
 * Every error has a stable `code` and a message that says what to do instead.
 *
 * `AckwireError`, the base of every typed error the package throws, is defined here because the
 * channels are the lowest layer that throws: the session's errors (src/session/errors.ts) and
 * the API's (src/api/errors.ts) extend it too, and both modules re-export it, so the package
 * root has one class per error and `instanceof` holds whichever layer threw.
 *
 * Codes: every code of the package is `ERR_*` (configuration errors `ERR_<LAYER>_CONFIG`).
 */
export class AckwireError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
  }
}

/** Misuse of the channels: send()'s arguments, or a channel list that cannot work. */
export class ChannelError extends AckwireError {
  constructor(code: string, message: string) {
    super(code, message);
  }
}

/** send() named a channel index that is not configured. */
export class UnknownChannelError extends ChannelError {
  readonly channel: number;
  constructor(channel: number, channelCount: number) {
    super(
      "ERR_UNKNOWN_CHANNEL",
      `channel ${channel} is not configured (this connection has channels 0..${channelCount - 1}); ` +
        `send on one of those or add the channel to the endpoint's channels config`,
    );
    this.channel = channel;
  }
}

/** send() got a message larger than the channel's maxMessageBytes. */
export class MessageTooLargeError extends ChannelError {
  readonly size: number;
  readonly limit: number;
  constructor(channel: number, size: number, limit: number) {
    super(
      "ERR_MESSAGE_TOO_LARGE",
      `message of ${size} bytes exceeds channel ${channel}'s maxMessageBytes (${limit}); ` +
        `split it, or raise maxMessageBytes for that channel (same value on both peers)`,
    );
    this.size = size;
    this.limit = limit;
  }
}

/** A LatestState send without a key, or a key on another mode, or a key out of u32 range. */
export class InvalidKeyError extends ChannelError {
  constructor(channel: number, detail: string) {
    super("ERR_INVALID_KEY", `channel ${channel}: ${detail}`);
  }
}

/** A LatestState channel already tracks maxKeys keys and send() named a new one. */
export class TooManyKeysError extends ChannelError {
  readonly limit: number;
  constructor(channel: number, limit: number) {
    super(
      "ERR_TOO_MANY_KEYS",
      `LatestState channel ${channel} already tracks ${limit} keys; reuse existing keys ` +
        `or raise the channel's maxKeys (same value on both peers)`,
    );
    this.limit = limit;
  }
}

/** The channel list or one channel's options cannot work (bad mode, limits past the window). */
export class ChannelConfigError extends ChannelError {
  constructor(detail: string) {
    super("ERR_CHANNEL_CONFIG", detail);
  }
}

/** send() got a delayMs that is negative, NaN or infinite. */
export class InvalidDelayError extends ChannelError {
  readonly delayMs: number;
  constructor(delayMs: number) {
    super(
      "ERR_INVALID_DELAY",
      `delayMs must be a finite number >= 0 (milliseconds from now until the message may leave), got ${String(delayMs)}; ` +
        `omit it or pass 0 to send at once`,
    );
    this.delayMs = delayMs;
  }
}

/** send() got a deadlineMs that is not a finite number > 0, or one on a latest-state channel. */
export class InvalidDeadlineError extends ChannelError {
  readonly deadlineMs: number;
  constructor(deadlineMs: number, detail?: string) {
    super(
      "ERR_INVALID_DEADLINE",
      detail ??
        `deadlineMs must be a finite number > 0 (milliseconds from send() until the message is given up if not delivered), ` +
          `got ${String(deadlineMs)}; omit it for no deadline`,
    );
    this.deadlineMs = deadlineMs;
  }
}

/** send() got data that is not a Uint8Array (a string, an ArrayBuffer, a DataView, null...). */
export class InvalidDataError extends ChannelError {
  /** `detail` replaces the message's generic advice (a detached buffer, say). */
  constructor(data: unknown, detail?: string) {
    const what = data === null ? "null" : typeof data !== "object" ? typeof data : ((data as object).constructor?.name ?? "an object");
    super(
      "ERR_INVALID_DATA",
      detail ??
        `send() takes the message as a Uint8Array (a Node Buffer is one), got ${what}; ` +
          `wrap an ArrayBuffer as new Uint8Array(buffer), encode a string with new TextEncoder().encode(text)`,
    );
  }
}
