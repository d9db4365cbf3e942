/**
 * Typed errors of the game layer. Each has a stable `code` and a message that says what to do.
 * They extend the API's `AckwireError`, so one `catch (e) { e.code }` covers the whole package.
 *
 * Hostile input off the wire is never thrown: the modules count it and drop it. These errors are
 * for misuse by the calling application, and for outcomes of calls (RPC timeouts, remote errors).
 */
import { AckwireError } from "../api/errors.js";

export class GameError extends AckwireError {}

/** A value the game layer cannot encode or an option outside its range. */
export class GameUsageError extends GameError {
  constructor(message: string) {
    super("ERR_GAME_USAGE", message);
  }
}

/** A message would be larger than the configured limit. */
export class GameMessageTooLargeError extends GameError {
  constructor(what: string, size: number, limit: number) {
    super("ERR_GAME_MESSAGE_TOO_LARGE", `${what} is ${size} bytes, over the limit of ${limit}: send less, split it, or raise the limit option`);
  }
}

/** Prediction: a tick that is not (or no longer) in the circular buffer. */
export class TickOutOfBufferError extends GameError {
  readonly tick: number;
  readonly oldest: number;
  readonly newest: number;
  constructor(tick: number, oldest: number, newest: number) {
    super(
      "ERR_TICK_OUT_OF_BUFFER",
      tick < oldest
        ? `tick ${tick} is older than the buffer (oldest ${oldest}, newest ${newest}): if a newer server state was applied already, this one is stale (ignore it); else the correction is too late to replay: call reset(tick, state) to snap to the server, or raise capacity`
        : `tick ${tick} is newer than the newest predicted tick ${newest}: the server is ahead of the client; call reset(tick, state) to jump forward`,
    );
    this.tick = tick;
    this.oldest = oldest;
    this.newest = newest;
  }
}

/** Lockstep: a command submission the lockstep rules do not allow. */
export class LockstepUsageError extends GameError {
  constructor(message: string) {
    super("ERR_LOCKSTEP_USAGE", message);
  }
}

/** RPC: the call did not get an answer in time. */
export class RpcTimeoutError extends GameError {
  constructor(method: string, timeoutMs: number) {
    super("ERR_RPC_TIMEOUT", `call "${method}" got no answer within ${timeoutMs} ms: check the peer handles it, or pass a larger timeoutMs`);
  }
}

/** RPC: the caller's AbortSignal fired. */
export class RpcAbortedError extends GameError {
  constructor(method: string) {
    super("ERR_RPC_ABORTED", `call "${method}" was cancelled by its AbortSignal`);
  }
}

/** RPC: too many calls in flight on this connection. */
export class RpcBusyError extends GameError {
  constructor(limit: number) {
    super("ERR_RPC_BUSY", `${limit} calls are already in flight on this connection: await some before calling more, or raise maxInFlight`);
  }
}

/** RPC: the peer is closed (connection ended or close() called). */
export class RpcClosedError extends GameError {
  constructor(reason: string) {
    super("ERR_RPC_CLOSED", `the RPC peer is closed (${reason}): open a new connection and attach a new peer`);
  }
}

/**
 * RPC: the remote handler failed. `remoteCode` is the handler's error code (its `code` string if
 * it threw one, "ERR_RPC_UNKNOWN_METHOD", "ERR_RPC_BUSY" or "ERR_RPC_HANDLER" otherwise).
 */
export class RpcRemoteError extends GameError {
  readonly remoteCode: string;
  constructor(method: string, remoteCode: string, remoteMessage: string) {
    super("ERR_RPC_REMOTE", `remote "${method}" failed with ${remoteCode}: ${remoteMessage}`);
    this.remoteCode = remoteCode;
  }
}

/**
 * ByteReader: a read past the end of the message (`kind: "truncated"`), or bytes that are not
 * what the field allows (`"malformed"`: a varuint over 8 bytes or past 2^53, a bool byte other
 * than 0/1, invalid UTF-8, a length over its limit, bytes left after the last field). `offset`
 * is where the field started. Off the wire it means the message is damaged or foreign: drop it
 * (and count it); the game layer's own decoders do.
 */
export class ByteReadError extends GameError {
  readonly kind: "truncated" | "malformed";
  readonly offset: number;
  constructor(kind: "truncated" | "malformed", offset: number, detail: string) {
    super(
      "ERR_GAME_READ",
      kind === "truncated"
        ? `read past the end of the message at byte ${offset} (${detail}): it is shorter than its reader expects, so it is truncated or not this format; drop it, and check that writer and reader use the same fields in the same order`
        : `malformed message at byte ${offset}: ${detail}; drop it, and check that writer and reader use the same fields in the same order`,
    );
    this.kind = kind;
    this.offset = offset;
  }
}

/** Codec: a value that cannot be encoded (functions, symbols, cycles, too deep, NaN keys...). */
export class CodecError extends GameError {
  constructor(message: string) {
    super("ERR_GAME_CODEC", message);
  }
}

/** Lobby: the registry holds maxEntries hosts already. */
export class LobbyFullError extends GameError {
  constructor(limit: number) {
    super("ERR_LOBBY_FULL", `the lobby lists ${limit} hosts already: try again later (or raise maxEntries on the lobby server)`);
  }
}

/** Lobby: a heartbeat or update from a connection that has no registered host. */
export class LobbyNotRegisteredError extends GameError {
  constructor() {
    super("ERR_LOBBY_NOT_REGISTERED", "this connection has no host in the lobby (it expired or was never registered): call register again");
  }
}
