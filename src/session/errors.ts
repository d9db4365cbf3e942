/**
 * Typed errors for misuse of the session API by its caller. Hostile or broken input from the
 * network is never thrown: it is counted and dropped (see ConnectionStats / drop counters).
 * Every error has a stable `code` and a message that says what to do instead.
 *
 * `Endpoint.send()` checks its arguments in the channel layer: those errors are the channels'
 * (src/channels/errors.ts: UnknownChannelError, MessageTooLargeError, InvalidKeyError,
 * TooManyKeysError, InvalidDelayError, InvalidDeadlineError, InvalidDataError; ChannelConfigError for a channel list
 * that cannot work), re-exported here so there is one class per error. All of them, and
 * SessionError, extend AckwireError.
 */
import { AckwireError } from "../channels/errors.js";

export {
  AckwireError,
  ChannelConfigError,
  ChannelError,
  InvalidDataError,
  InvalidDeadlineError,
  InvalidDelayError,
  InvalidKeyError,
  MessageTooLargeError,
  TooManyKeysError,
  UnknownChannelError,
} from "../channels/errors.js";

export class SessionError extends AckwireError {
  constructor(code: string, message: string) {
    super(code, message);
  }
}

export class ConnectionClosedError extends SessionError {
  constructor(connection: number, state: string) {
    super(
      "ERR_CONNECTION_CLOSED",
      `connection ${connection} is ${state}; wait for its "connect" event before sending, and stop sending after "disconnect" (connect again for a new connection)`,
    );
  }
}

export class UnknownConnectionError extends SessionError {
  constructor(connection: number) {
    super("ERR_UNKNOWN_CONNECTION", `no connection ${connection} on this endpoint; it was never opened or has closed (ids are not reused)`);
  }
}

export class InvalidReasonError extends SessionError {
  constructor(code: unknown) {
    super(
      "ERR_INVALID_REASON",
      `application disconnect code ${String(code)} is out of range; use an integer in 64..255 (0..63 are reserved for the protocol, PROTOCOL §4), or a named reason such as "normal"`,
    );
  }
}

export class InvalidAddressError extends SessionError {
  constructor(address: string) {
    super("ERR_INVALID_ADDRESS", `malformed address ${JSON.stringify(address)}; write "host:port" or "[ipv6]:port" with a port in 1..65535`);
  }
}

export class InvalidPunchTokenError extends SessionError {
  constructor(token: unknown) {
    const what = token instanceof Uint8Array ? `a Uint8Array of ${token.length} bytes` : typeof token;
    super("ERR_INVALID_PUNCH_TOKEN", `a punch token is the 8-byte Uint8Array the introducer gave both peers, got ${what}`);
  }
}

export class AlreadyConnectedError extends SessionError {
  constructor(address: string) {
    super("ERR_ALREADY_CONNECTED", `this endpoint already has a connection with ${address}; close it first or reuse it`);
  }
}

export class TooManyHandshakesError extends SessionError {
  constructor(limit: number) {
    super("ERR_TOO_MANY_HANDSHAKES", `${limit} connection attempts are already pending; wait for one to finish or raise maxPendingHandshakes`);
  }
}

export class TooManyConnectionsError extends SessionError {
  constructor(limit: number) {
    super("ERR_TOO_MANY_CONNECTIONS", `this endpoint holds maxConnections (${limit}) connections, counting those it opened itself; close one or raise maxConnections`);
  }
}

export class UserDataTooLargeError extends SessionError {
  /** `packet`: the connect handshake's (connect(), accept hooks) or the goodbye's (close()). */
  constructor(bytes: number, limit: number, packet: "handshake" | "disconnect" = "handshake") {
    super(
      "ERR_USER_DATA_TOO_LARGE",
      packet === "handshake"
        ? `user data of ${bytes} bytes exceeds the ${limit}-byte limit of this handshake packet; send the rest as a message after connecting`
        : `close() user data of ${bytes} bytes exceeds the ${limit}-byte limit of the DISCONNECT packet; send the rest as a message before closing (close() delivers what was sent before it)`,
    );
  }
}

export class SessionConfigError extends SessionError {
  constructor(message: string) {
    super("ERR_SESSION_CONFIG", message);
  }
}

export class NotAServerError extends SessionError {
  constructor() {
    super("ERR_NOT_A_SERVER", "this endpoint was created without server: true; it cannot accept connections");
  }
}
