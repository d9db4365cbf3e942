/**
 * Typed errors for misuse of the channel API by its caller (the application, through the
 * connection). Off-the-wire problems are never thrown: they are counted and dropped.
 * Every error has a stable `code` and a message that says what to do instead.
 */
export class ChannelError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** send() named a channel index that is not configured. */
export class UnknownChannelError extends ChannelError {
  readonly channel: number;
  constructor(channel: number, channelCount: number) {
    super(
      "unknown-channel",
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
      "message-too-large",
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
    super("invalid-key", `channel ${channel}: ${detail}`);
  }
}

/** A LatestState channel already tracks maxKeys keys and send() named a new one. */
export class TooManyKeysError extends ChannelError {
  readonly limit: number;
  constructor(channel: number, limit: number) {
    super(
      "too-many-keys",
      `LatestState channel ${channel} already tracks ${limit} keys; reuse existing keys ` +
        `or raise the channel's maxKeys (same value on both peers)`,
    );
    this.limit = limit;
  }
}

/** The channel list or one channel's options cannot work (bad mode, limits past the window). */
export class ChannelConfigError extends ChannelError {
  constructor(detail: string) {
    super("invalid-channel-config", detail);
  }
}

/** send() got a delayMs that is negative, NaN or infinite. */
export class InvalidDelayError extends ChannelError {
  readonly delayMs: number;
  constructor(delayMs: number) {
    super(
      "invalid-delay",
      `delayMs must be a finite number >= 0 (milliseconds from now until the message may leave), got ${String(delayMs)}; ` +
        `omit it or pass 0 to send at once`,
    );
    this.delayMs = delayMs;
  }
}
