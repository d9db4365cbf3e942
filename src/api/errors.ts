/**
 * Typed errors of the public API. Each has a stable `code` and a message that says what to do.
 *
 * One hierarchy, one class per error: every typed error the package throws extends
 * `AckwireError` (defined with the channel errors, the lowest layer, and re-exported here and by
 * src/session/errors.ts). Below it: the API's own errors (this module), `SessionError` (misuse of
 * the session: a send on a connection that is closing, an invalid address...), `ChannelError`
 * (send()'s arguments: unknown channel, too large, key, delay, data; a channel list that cannot
 * work), and the secure and relay layers' errors. The package root exports each class once, and
 * it is the class that is thrown. docs/RUNTIMES.md "Errors" lists the codes.
 */
import type { DenyReason, DisconnectReason } from "../session/types.js";
import { AckwireError, ChannelError } from "../channels/errors.js";
import { closestKey } from "../util/closest-key.js";
import type { Connection } from "./connection.js";

export { AckwireError };

export class AddressInUseError extends AckwireError {
  readonly port: number;
  constructor(host: string, port: number, cause?: unknown) {
    super("ERR_ADDRESS_IN_USE", `port ${port} is in use on ${host}: pick another port or pass port 0 (the OS picks a free one; read server.address.port)`, { cause });
    this.port = port;
  }
}

export class AddressNotAvailableError extends AckwireError {
  constructor(host: string, cause?: unknown) {
    super("ERR_ADDRESS_NOT_AVAILABLE", `cannot bind to ${host}: it is not an address of this machine; use 0.0.0.0, ::, 127.0.0.1 or ::1`, { cause });
  }
}

export class HostNotFoundError extends AckwireError {
  readonly host: string;
  constructor(host: string, cause?: unknown) {
    super("ERR_HOST_NOT_FOUND", `cannot resolve host "${host}": check the spelling, or pass an IP address such as 127.0.0.1 or [::1]`, { cause });
    this.host = host;
  }
}

export class InvalidTargetError extends AckwireError {
  constructor(target: unknown) {
    super("ERR_INVALID_TARGET", `cannot parse ${JSON.stringify(target)} as an address: write "host:port", "[ipv6]:port" or { host, port } with a port in 1..65535`);
  }
}

export class UnstableNetRequiredError extends AckwireError {
  constructor() {
    super("ERR_DENO_UNSTABLE_NET", "run deno with --unstable-net (Deno.listenDatagram needs it), e.g. deno run --unstable-net --allow-net app.ts");
  }
}

export class SocketError extends AckwireError {
  constructor(what: string, cause: unknown) {
    super("ERR_SOCKET", `${what}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/** `connect()` was refused by the server (full, version mismatch, its accept hook...). */
export class ConnectDeniedError extends AckwireError {
  readonly deny: DenyReason | undefined;
  readonly userData: Uint8Array | undefined;
  constructor(address: string, deny: DenyReason | undefined, userData: Uint8Array | undefined) {
    const hint: Record<string, string> = {
      "server-full": "the server is at maxConnections, or too busy deciding on other clients (its async accept hook: maxPendingAccepts, acceptTimeoutMs); retry later",
      "version-mismatch": "client and server appVersion differ; update one of them",
      "channel-mismatch": "client and server channel lists differ; configure the same channels on both",
      refused: "the server's accept hook said no; see error.userData for its reason",
      "rate-limited": "too many attempts from this address; wait a second and retry",
    };
    super("ERR_CONNECT_DENIED", `${address} denied the connection (${deny ?? "no reason given"}): ${hint[deny ?? ""] ?? "check the server's logs"}`);
    this.deny = deny;
    this.userData = userData;
  }
}

export class ConnectTimeoutError extends AckwireError {
  constructor(address: string, ms: number) {
    super("ERR_CONNECT_TIMEOUT", `no answer from ${address} within ${ms} ms: check that a server is listening there with the same protocolId, and that UDP is not blocked`);
  }
}

/**
 * `connect()` heard that nothing listens at the address: the host answered with an ICMP port
 * unreachable (the runtime's ECONNREFUSED on a connected socket; Node and Bun report it, Deno
 * does not, so there connect() waits for its timeout).
 */
export class ConnectRefusedError extends AckwireError {
  constructor(address: string) {
    super("ERR_CONNECT_REFUSED", `nothing listens at ${address}: its host answered port unreachable; check the port, and that the server is running`);
  }
}

export class ConnectAbortedError extends AckwireError {
  constructor(address: string, reason?: unknown) {
    super("ERR_CONNECT_ABORTED", `connect to ${address} was aborted by its AbortSignal`, { cause: reason });
  }
}

/** The handshake ended some other way (protocol violation, no-connection...). */
export class ConnectFailedError extends AckwireError {
  readonly reason: DisconnectReason;
  constructor(address: string, reason: DisconnectReason) {
    super("ERR_CONNECT_FAILED", `connect to ${address} failed (${typeof reason === "string" ? reason : `app reason ${reason.app}`}); check protocolId and that the address runs an ackwire server`);
    this.reason = reason;
  }
}

export class InvalidOptionError extends AckwireError {
  constructor(message: string) {
    super("ERR_INVALID_OPTION", message);
  }
}

export class MessageQueueOverflowError extends AckwireError {
  constructor(limit: number) {
    super("ERR_MESSAGE_QUEUE_OVERFLOW", `more than ${limit} messages waited in this async iterator; consume faster, or raise maxQueuedMessages (or use the "message" event)`);
  }
}

export class ClosedError extends AckwireError {
  constructor(what: string) {
    super("ERR_CLOSED", `${what} is closed; create a new one with listen() or connect()`);
  }
}

/**
 * An application callback threw: a listener of `event` ("message", "disconnect"...) or the
 * accept hook ("accept"). Delivered to the "error" listeners of the connection, else of its
 * server; the connection and the server keep running. `cause` is what was thrown.
 */
export class ListenerError extends AckwireError {
  /** The event whose listener threw, or "accept" for the accept hook. */
  readonly event: string;
  /** The connection whose listener threw, when it was one of a connection's (set as it reaches a server's "error" listeners). */
  connection: Connection | undefined = undefined;
  constructor(event: string, cause: unknown) {
    const what = event === "accept" ? "the accept hook" : `a "${event}" listener`;
    super("ERR_LISTENER", `${what} threw: ${(cause as Error)?.message ?? String(cause)} (the connection and the server keep running; see error.cause for the stack)`, { cause });
    this.event = event;
  }
}

/** send() named a channel (`{ channel: "chat" }`) that no channel config has as its `name`. */
export class UnknownChannelNameError extends ChannelError {
  readonly channel: string;
  constructor(name: string, known: readonly string[]) {
    const best = closestKey(name, known);
    const hint = best !== undefined ? ` (did you mean ${JSON.stringify(best)}?)` : "";
    const list = known.length > 0 ? `the named channels are ${known.map((n) => JSON.stringify(n)).join(", ")}` : "no channel has a name: give one with { mode, name } in the channels option, or send by index";
    super("ERR_UNKNOWN_CHANNEL_NAME", `no channel is named ${JSON.stringify(name)}${hint}; ${list}`);
    this.channel = name;
  }
}
