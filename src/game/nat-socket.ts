/**
 * NAT traversal on a real socket (./nat.ts explains the exchange): the joiner's `natConnect()`
 * and the host's `answerIntroductions()`, both on a listening socket that also connects out
 * (the package root's `Server`, or ackwire/worker's `WorkerServer`), so the lobby, the punches
 * and the game all use one port, the one whose NAT mapping the lobby saw.
 */
import { sameFamily, type HostPort } from "../api/address.js";
import type { DisconnectInfo } from "../api/connection.js";
import { host, monotonicNow, type AbortSignalLike } from "../api/host.js";
import { ConnectTimeoutError } from "../api/errors.js";
import type { ServerConnectOptions } from "../api/runtime.js";
import type { Address } from "../session/sans-io.js";
import type { Value } from "./codec.js";
import { GameUsageError } from "./errors.js";
import { candidates, INTRODUCE_METHOD, parseIntroduction, PunchRuns, sameToken, type NatIntroduction, type PunchSchedule } from "./nat.js";
import type { RpcHandler } from "./rpc.js";
import { ModuleTimer } from "./timer.js";

/** What NAT traversal needs of a connection: its address and its end. */
export interface NatConnection {
  readonly address: Address;
  once(type: "disconnect", listener: (info: DisconnectInfo) => void): unknown;
}

/**
 * What NAT traversal needs of a listening socket. The package root's `Server` and
 * ackwire/worker's `WorkerServer` are both one.
 */
export interface NatSocket<C extends NatConnection = NatConnection> {
  readonly address: HostPort;
  connect(target: Address, options?: ServerConnectOptions): Promise<C>;
  punch(address: Address, token: Uint8Array, acceptToken?: Uint8Array): void;
  addRelayRoute(relay: Address, token: Uint8Array): Address;
  bindRelayRoute(virtual: Address): boolean;
  removeRelayRoute(virtual: Address): void;
  on(type: "punch", listener: (punch: { address: Address; token: Uint8Array }) => void): unknown;
  off(type: "punch", listener: (punch: { address: Address; token: Uint8Array }) => void): unknown;
  on(type: "disconnect", listener: (event: { connection: C }) => void): unknown;
  off(type: "disconnect", listener: (event: { connection: C }) => void): unknown;
}

/** Punch runs sent from a server's socket, on one timer. */
class ServerPuncher {
  readonly runs = new PunchRuns();
  readonly #server: NatSocket;
  readonly #timer: ModuleTimer;

  constructor(server: NatSocket) {
    this.#server = server;
    this.#timer = new ModuleTimer({
      pollTimeout: () => this.runs.pollTimeout(),
      handleTimeout: (now) =>
        this.runs.handleTimeout(
          now,
          (address, token, acceptToken) => this.#server.punch(address, token, acceptToken),
          (virtual) => this.#server.bindRelayRoute(virtual),
        ),
    });
  }

  /** Starts punching the introduction's addresses; with `bind` (a relay route), binding it each round too. */
  start(intro: NatIntroduction, schedule?: PunchSchedule, bind?: Address): boolean {
    const started = this.runs.start(monotonicNow(), candidates(intro), intro.token, intro.peerToken, schedule, bind);
    this.#timer.poke();
    return started;
  }

  close(): void {
    this.#timer.stop();
  }
}

export interface AnsweringIntroductions {
  /** Mount these on the host's lobby RPC (attachRpc(..., { handlers })). */
  readonly handlers: Record<string, RpcHandler>;
  /**
   * Introductions answered (punching started), refused (malformed, or MAX_PUNCH_RUNS busy),
   * relay routes added for them, and relay allocations this socket could not use (other family).
   */
  readonly counters: { introductions: number; refused: number; relayRoutes: number; relayRefused: number };
  /** Stops punching. */
  close(): void;
}

/**
 * The host's side: when the lobby introduces a joiner ("nat.introduce"), punch the joiner's
 * addresses from `server`'s socket. The host must have registered with the lobby from that
 * socket (`server.connect(lobby)`, gamePort 0). The joiner then connects as to any server.
 */
export function answerIntroductions<C extends NatConnection>(server: NatSocket<C>, schedule?: PunchSchedule): AnsweringIntroductions {
  const puncher = new ServerPuncher(server);
  const counters = { introductions: 0, refused: 0, relayRoutes: 0, relayRefused: 0 };
  // A relayed joiner's connection ended: its route is done with (a virtual address is never
  // reused). Routes never used stay until newer ones push them out (64 at most).
  const onDisconnect = ({ connection }: { connection: C }): void => server.removeRelayRoute(connection.address);
  server.on("disconnect", onDisconnect);
  return {
    handlers: {
      [INTRODUCE_METHOD]: (params) => {
        let intro;
        try {
          intro = parseIntroduction(params);
        } catch (error) {
          counters.refused++;
          throw error;
        }
        // A relay allocation: route it now (that sends the first bind), and bind again each
        // punch round, since the joiner may come through the relay seconds later. A relay of
        // the other address family than this socket's cannot be used: punching goes on alone.
        let bind: Address | undefined;
        if (intro.relay !== undefined) {
          try {
            bind = server.addRelayRoute(intro.relay.address, intro.relay.token);
            counters.relayRoutes++;
          } catch {
            counters.relayRefused++;
          }
        }
        // Busy (MAX_PUNCH_RUNS at once): refused, and the joiner falls back or times out.
        if (!puncher.start(intro, schedule, bind)) {
          counters.refused++;
          return null;
        }
        counters.introductions++;
        return null;
      },
    },
    counters,
    close: () => {
      puncher.close();
      server.off("disconnect", onDisconnect);
    },
  };
}

export interface NatConnectOptions {
  /** This socket's addresses on its own networks ("ip:port"), for a host on the same LAN. */
  local?: Address[];
  /** How long to wait for the host's first punch before connecting to its public address. Default 2000 ms. */
  punchWaitMs?: number;
  schedule?: PunchSchedule;
  /** The handshake's options (timeout, user data, abort signal). */
  connect?: ServerConnectOptions;
  /**
   * Fall back to the relay the introduction offers (if the lobby has one) when the direct
   * handshake times out. Default true.
   */
  relay?: boolean;
  /**
   * With a relay to fall back to: how long the direct handshake may take before it. Default
   * 2000 ms, or `connect.connectTimeoutMs` if shorter. (Without a relay the direct handshake
   * takes `connect.connectTimeoutMs`.) The relay forgets an allocation not used within 15 s of
   * the introduction, so keep `punchWaitMs` + this well under that.
   */
  directTimeoutMs?: number;
}

/**
 * The joiner's side: asks the lobby (`lobby.call`, an attachRpc over a connection that
 * `server` opened to the lobby) to introduce it to host `hostId`, punches the host's
 * addresses, and connects from `server`'s socket to the first address a punch came from (else
 * the host's public address). Rejects with the lobby's error (NatHostUnavailableError,
 * NatRateLimitedError...) or the handshake's (ConnectTimeoutError when no path exists).
 */
export async function natConnect<C extends NatConnection>(
  server: NatSocket<C>,
  lobby: { call(method: string, params?: unknown): Promise<Value> },
  hostId: number,
  options: NatConnectOptions = {},
): Promise<C> {
  const waitMs = options.punchWaitMs ?? 2000;
  if (!(waitMs >= 0 && waitMs <= 60_000)) throw new GameUsageError(`punchWaitMs must be in 0..60000, got ${String(waitMs)}`);
  const directMs = options.directTimeoutMs ?? 2000;
  if (!(directMs >= 100 && directMs <= 60_000)) throw new GameUsageError(`directTimeoutMs must be in 100..60000, got ${String(directMs)}`);
  const intro = parseIntroduction(await lobby.call(INTRODUCE_METHOD, { id: hostId, local: options.local ?? [], relay: options.relay !== false }));
  // A relay of the other address family than this socket's cannot be used: as if none.
  const relay = options.relay === false || intro.relay === undefined || !sameFamily(intro.relay.address, server.address) ? undefined : intro.relay;
  const puncher = new ServerPuncher(server);
  let target: Address;
  try {
    const punched = firstPunch(server, intro.peerToken, waitMs, options.connect?.signal);
    puncher.start(intro, options.schedule);
    target = (await punched) ?? intro.address;
    if (relay === undefined) return await server.connect(target, options.connect);
    try {
      return await server.connect(target, { ...options.connect, connectTimeoutMs: Math.min(directMs, options.connect?.connectTimeoutMs ?? Infinity) });
    } catch (error) {
      if (!(error instanceof ConnectTimeoutError)) throw error;
    }
  } finally {
    puncher.close();
  }
  // No direct path (a symmetric NAT on either side): through the relay, whose route the host
  // added when it was introduced.
  const virtual = server.addRelayRoute(relay.address, relay.token);
  let connection: C;
  try {
    connection = await server.connect(virtual, options.connect);
  } catch (error) {
    server.removeRelayRoute(virtual);
    throw error;
  }
  connection.once("disconnect", () => server.removeRelayRoute(virtual));
  return connection;
}

/**
 * The address of the first punch carrying the host's `token` to reach `server`, or undefined
 * after `waitMs` or when `signal` aborts (the connect that follows then rejects at once).
 */
function firstPunch(server: NatSocket, token: Uint8Array, waitMs: number, signal: AbortSignalLike | undefined): Promise<Address | undefined> {
  return new Promise((resolve) => {
    const done = (address: Address | undefined): void => {
      host.clearTimeout(timer);
      server.off("punch", onPunch);
      signal?.removeEventListener("abort", onAbort);
      resolve(address);
    };
    const onAbort = (): void => done(undefined);
    if (signal?.aborted === true) return resolve(undefined);
    signal?.addEventListener("abort", onAbort, { once: true });
    const onPunch = (punch: { address: Address; token: Uint8Array }): void => {
      if (sameToken(punch.token, token)) done(punch.address);
    };
    const timer = host.setTimeout(() => done(undefined), waitMs);
    server.on("punch", onPunch);
  });
}
