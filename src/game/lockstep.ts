/**
 * Deterministic lockstep turns for RTS-style games (NETTURN/DONETURN turns, "deterministic
 * peer-to-peer lockstep"): every peer runs the same commands on the same turn,
 * so only commands travel, never state.
 *
 * Rules:
 * - Turns are numbered from 0. A command batch submitted while turn N is next to execute is for
 *   turn N + turnDelay (the delay hides the network round trip). Turns 0..turnDelay-1 are empty
 *   for everyone and need no messages.
 * - A turn executes only when every player's batch for it has arrived (an empty batch is still a
 *   batch: it says "I have nothing for this turn", and is what lets the others go on).
 * - Batches go out on a reliable-ordered channel, either to every other peer (peer-to-peer mesh)
 *   or to a relay (`LockstepRelay`) that forwards them to the rest. This module does not resend:
 *   the transport does.
 * - Each batch also carries DONETURN: the last turn this peer executed and a running hash of every
 *   command it has executed so far. Peers compare those hashes with their own and report a
 *   "desync" event on the first mismatch.
 * - If the next turn is not ready `stallAfterMs` after the game first asked for it, the peer
 *   reports a "stall" event naming the players whose batches are missing (who holds the turn).
 * - Batches are kept for turns up to `maxTurnsAhead` past the next turn to execute (the memory
 *   bound); later ones are dropped, and never come again (the transport delivered them). So
 *   maxTurnsAhead must cover the furthest a peer that follows the rules can be ahead of us, or a
 *   lagging peer deadlocks for good: a peer submits at most turnDelay turns past its own next
 *   turn E', and it can execute turn t only once our batch for t is there, which we send at most
 *   turnDelay turns past our next turn E. So E' <= E + turnDelay + 1, and its batches reach
 *   E + 2 * turnDelay + 1: the least maxTurnsAhead allowed (and the default when above 64).
 *
 * Wire format (little-endian), one message per batch:
 *   u8 type = 1 (NETTURN) | u8 player | u32 turn | u32 doneTurn + 1 (0 = none yet) |
 *   u32 doneHash | varuint length | commands (opaque bytes for the game)
 */
import { ByteReader, ByteWriter } from "./bytes.js";
import { ByteReadError, GameMessageTooLargeError, LockstepUsageError } from "./errors.js";

const NETTURN = 1;
/** FNV-1a 32-bit offset basis and prime. */
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** Own turn hashes kept for comparison with late DONETURN reports. */
const HASH_HISTORY = 256;
const MAX_TURNS_AHEAD = 65_536;
const MAX_COMMAND_BYTES = 16 * 1024 * 1024;

function checkCommandBytes(value: unknown): number {
  if (!(typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= MAX_COMMAND_BYTES)) {
    throw new LockstepUsageError(`maxCommandBytes must be an integer in 0..${MAX_COMMAND_BYTES}, got ${String(value)}`);
  }
  return value;
}

export interface LockstepOptions {
  /** Number of players (2..64); players are numbered 0..players-1. */
  players: number;
  /** This peer's player number. */
  self: number;
  /** Turns between submitting and executing. Default 2. */
  turnDelay?: number;
  /** Report a stall after waiting this long for the next turn (a finite number >= 0). Default 500 ms. */
  stallAfterMs?: number;
  /** Batches accepted at most this many turns past the next turn to execute: an integer in
   *  2 * turnDelay + 1..65536 (see the module notes). Default 64, or 2 * turnDelay + 1 if more. */
  maxTurnsAhead?: number;
  /** Largest command batch, in bytes (0..16 MiB). Default 4096. */
  maxCommandBytes?: number;
}

export interface ExecutedTurn {
  turn: number;
  /** One batch per player, in player order (empty batch: nothing this turn). */
  commands: Uint8Array[];
  /** Running FNV-1a hash of every command executed up to and including this turn. */
  hash: number;
}

export interface StallInfo {
  turn: number;
  /** Players whose batch for `turn` is missing. */
  waitingFor: number[];
  waitedMs: number;
}

export type LockstepEvent =
  | ({ type: "stall" } & StallInfo)
  | { type: "desync"; turn: number; player: number; ours: number; theirs: number };

export interface LockstepCounters {
  batchesSent: number;
  batchesReceived: number;
  /** Batches for a turn already executed, or a second batch for the same turn and player. */
  duplicates: number;
  /** Batches beyond maxTurnsAhead: dropped (the sender ran ahead of the rules). */
  tooFarAhead: number;
  malformed: number;
}

export interface NetTurn {
  player: number;
  turn: number;
  /** The sender's last executed turn, or -1. */
  doneTurn: number;
  doneHash: number;
  commands: Uint8Array;
}

export function encodeNetTurn(m: NetTurn): Uint8Array {
  return new ByteWriter(16 + m.commands.length).u8(NETTURN).u8(m.player).u32(m.turn).u32(m.doneTurn + 1).u32(m.doneHash >>> 0).blob(m.commands).finish();
}

/** Parses one NETTURN; undefined if malformed or for a player outside 0..players-1. */
export function decodeNetTurn(bytes: Uint8Array, players: number, maxCommandBytes: number): NetTurn | undefined {
  try {
    const r = new ByteReader(bytes);
    if (r.u8() !== NETTURN) return undefined;
    const player = r.u8();
    const turn = r.u32();
    const doneTurn = r.u32() - 1;
    const doneHash = r.u32();
    const commands = r.blob(maxCommandBytes);
    if (r.remaining !== 0 || player >= players) return undefined;
    return { player, turn, doneTurn, doneHash, commands };
  } catch (error) {
    if (error instanceof ByteReadError) return undefined;
    throw error;
  }
}

function fnv(hash: number, byte: number): number {
  return Math.imul(hash ^ byte, FNV_PRIME) >>> 0;
}

function hashTurn(previous: number, turn: number, commands: Uint8Array[]): number {
  let h = previous;
  for (let s = 0; s < 32; s += 8) h = fnv(h, (turn >>> s) & 0xff);
  for (const batch of commands) {
    for (let s = 0; s < 32; s += 8) h = fnv(h, (batch.length >>> s) & 0xff);
    for (let i = 0; i < batch.length; i++) h = fnv(h, batch[i]!);
  }
  return h;
}

export class LockstepPeer {
  readonly players: number;
  readonly self: number;
  readonly turnDelay: number;
  readonly counters: LockstepCounters = { batchesSent: 0, batchesReceived: 0, duplicates: 0, tooFarAhead: 0, malformed: 0 };
  readonly #send: (bytes: Uint8Array) => void;
  readonly #stallAfterMs: number;
  readonly #maxAhead: number;
  readonly #maxCommandBytes: number;
  /** turn -> batch per player (undefined: not arrived). Only turns >= #nextExecute are kept. */
  #pending = new Map<number, (Uint8Array | undefined)[]>();
  #nextExecute = 0;
  #nextSubmit: number;
  #hash = FNV_OFFSET;
  #hashes = new Map<number, number>();
  /** Remote DONETURN reports for turns we have not executed yet: turn -> [player, hash][]. */
  #remoteReports = new Map<number, [number, number][]>();
  #waitingSince: number | undefined;
  #stallReported = false;
  #desynced = false;
  #events: LockstepEvent[] = [];

  constructor(options: LockstepOptions, send: (bytes: Uint8Array) => void) {
    const { players, self } = options;
    if (!(Number.isInteger(players) && players >= 2 && players <= 64)) throw new LockstepUsageError(`players must be an integer in 2..64, got ${players}`);
    if (!(Number.isInteger(self) && self >= 0 && self < players)) throw new LockstepUsageError(`self must be a player number in 0..${players - 1}, got ${self}`);
    this.players = players;
    this.self = self;
    this.turnDelay = options.turnDelay ?? 2;
    if (!(Number.isInteger(this.turnDelay) && this.turnDelay >= 1 && this.turnDelay <= 64)) throw new LockstepUsageError(`turnDelay must be an integer in 1..64, got ${this.turnDelay}`);
    const stallAfterMs: unknown = options.stallAfterMs ?? 500;
    if (!(typeof stallAfterMs === "number" && Number.isFinite(stallAfterMs) && stallAfterMs >= 0)) {
      throw new LockstepUsageError(`stallAfterMs must be a finite number of ms >= 0, got ${String(stallAfterMs)}`);
    }
    this.#stallAfterMs = stallAfterMs;
    // The least that cannot deadlock a lagging peer (module notes), and the memory bound.
    const least = 2 * this.turnDelay + 1;
    const maxAhead: unknown = options.maxTurnsAhead ?? Math.max(64, least);
    if (!(typeof maxAhead === "number" && Number.isInteger(maxAhead) && maxAhead >= least && maxAhead <= MAX_TURNS_AHEAD)) {
      throw new LockstepUsageError(
        `maxTurnsAhead must be an integer in ${least}..${MAX_TURNS_AHEAD} with turnDelay ${this.turnDelay} (a peer that follows the rules sends batches up to 2 * turnDelay + 1 turns past a lagging peer's next turn, and a dropped batch never comes again), got ${String(maxAhead)}`,
      );
    }
    this.#maxAhead = maxAhead;
    this.#maxCommandBytes = checkCommandBytes(options.maxCommandBytes ?? 4096);
    this.#nextSubmit = this.turnDelay;
    this.#send = send;
  }

  /** The next turn to execute. */
  get nextTurn(): number {
    return this.#nextExecute;
  }
  /** The turn the next submit() is for. */
  get nextSubmitTurn(): number {
    return this.#nextSubmit;
  }
  /** True when submit() is allowed: this peer is not yet turnDelay turns ahead of execution. */
  get canSubmit(): boolean {
    return this.#nextSubmit <= this.#nextExecute + this.turnDelay;
  }

  /**
   * Submits this player's command batch (possibly empty) for the next submit turn and sends it.
   * Returns that turn. Throws LockstepUsageError when called more often than turns execute.
   */
  submit(commands: Uint8Array = new Uint8Array(0)): number {
    // A string or an array would be copied as mostly zero bytes by slice()/blob(): the other
    // peers would run commands nobody gave.
    if (!(commands instanceof Uint8Array)) {
      throw new LockstepUsageError(`commands must be a Uint8Array (encode them first, e.g. new TextEncoder().encode(text)), got ${commands === null ? "null" : Array.isArray(commands) ? "an array" : typeof commands}`);
    }
    if (!this.canSubmit) {
      throw new LockstepUsageError(
        `already submitted through turn ${this.#nextSubmit - 1} while turn ${this.#nextExecute} has not executed: submit once per executed turn (check canSubmit)`,
      );
    }
    if (commands.length > this.#maxCommandBytes) throw new GameMessageTooLargeError("the command batch", commands.length, this.#maxCommandBytes);
    const turn = this.#nextSubmit++;
    const copy = commands.slice();
    this.#slot(turn)[this.self] = copy;
    const doneTurn = this.#nextExecute - 1;
    this.counters.batchesSent++;
    this.#send(encodeNetTurn({ player: this.self, turn, doneTurn, doneHash: doneTurn >= 0 ? this.#hash : 0, commands: copy }));
    return turn;
  }

  /** Feeds one message from the lockstep channel. Bad input is counted and dropped. */
  receive(bytes: Uint8Array): void {
    const m = decodeNetTurn(bytes, this.players, this.#maxCommandBytes);
    if (m === undefined || m.player === this.self) {
      this.counters.malformed++;
      return;
    }
    this.counters.batchesReceived++;
    if (m.doneTurn >= 0) this.#checkRemoteHash(m.player, m.doneTurn, m.doneHash);
    if (m.turn < Math.max(this.#nextExecute, this.turnDelay)) {
      this.counters.duplicates++;
      return;
    }
    if (m.turn > this.#nextExecute + this.#maxAhead) {
      this.counters.tooFarAhead++;
      return;
    }
    const slot = this.#slot(m.turn);
    if (slot[m.player] !== undefined) {
      this.counters.duplicates++;
      return;
    }
    slot[m.player] = m.commands;
  }

  /**
   * The next turn if every batch for it is here (remove it and execute it), else undefined.
   * Call it from the game loop; `now` starts the stall clock when the turn is not ready.
   */
  pollTurn(now: number): ExecutedTurn | undefined {
    const turn = this.#nextExecute;
    let commands: Uint8Array[];
    if (turn < this.turnDelay) {
      commands = Array.from({ length: this.players }, () => new Uint8Array(0));
    } else {
      const slot = this.#pending.get(turn);
      if (slot === undefined || slot.some((batch) => batch === undefined)) {
        this.#waitingSince ??= now;
        this.handleTimeout(now);
        return undefined;
      }
      commands = slot as Uint8Array[];
      this.#pending.delete(turn);
    }
    this.#nextExecute++;
    this.#waitingSince = undefined;
    this.#stallReported = false;
    this.#hash = hashTurn(this.#hash, turn, commands);
    this.#hashes.set(turn, this.#hash);
    this.#hashes.delete(turn - HASH_HISTORY);
    const reports = this.#remoteReports.get(turn);
    if (reports !== undefined) {
      this.#remoteReports.delete(turn);
      for (const [player, hash] of reports) this.#checkRemoteHash(player, turn, hash);
    }
    return { turn, commands, hash: this.#hash };
  }

  /** Who holds the next turn, if the game has been waiting for it; undefined if not waiting. */
  stall(now: number): StallInfo | undefined {
    if (this.#waitingSince === undefined) return undefined;
    const turn = this.#nextExecute;
    const slot = this.#pending.get(turn);
    const waitingFor: number[] = [];
    for (let p = 0; p < this.players; p++) if (slot?.[p] === undefined) waitingFor.push(p);
    return { turn, waitingFor, waitedMs: now - this.#waitingSince };
  }

  pollTimeout(): number | undefined {
    if (this.#waitingSince === undefined || this.#stallReported) return undefined;
    return this.#waitingSince + this.#stallAfterMs;
  }

  /** Emits one "stall" event per turn once it has waited stallAfterMs. */
  handleTimeout(now: number): void {
    const deadline = this.pollTimeout();
    if (deadline === undefined || now < deadline) return;
    const info = this.stall(now);
    if (info === undefined) return;
    this.#stallReported = true;
    this.#events.push({ type: "stall", ...info });
  }

  pollEvent(): LockstepEvent | undefined {
    return this.#events.shift();
  }

  #slot(turn: number): (Uint8Array | undefined)[] {
    let slot = this.#pending.get(turn);
    if (slot === undefined) {
      slot = new Array<Uint8Array | undefined>(this.players).fill(undefined);
      this.#pending.set(turn, slot);
    }
    return slot;
  }

  #checkRemoteHash(player: number, turn: number, theirs: number): void {
    if (this.#desynced) return;
    if (turn >= this.#nextExecute) {
      // Not executed here yet: keep the report (bounded: only turns we still accept).
      if (turn > this.#nextExecute + this.#maxAhead) return;
      let list = this.#remoteReports.get(turn);
      if (list === undefined) this.#remoteReports.set(turn, (list = []));
      if (list.length < this.players) list.push([player, theirs]);
      return;
    }
    const ours = this.#hashes.get(turn);
    if (ours === undefined || ours === theirs) return;
    this.#desynced = true;
    this.#events.push({ type: "desync", turn, player, ours, theirs });
  }
}

export interface RelayCounters {
  forwarded: number;
  /** Batches whose player field was not the sender's: dropped. */
  spoofed: number;
  malformed: number;
}

/**
 * The server half of relayed lockstep: each connection belongs to one player; a batch from
 * player p is checked (it must say p) and forwarded to every other player. The relay keeps no
 * turn state beyond the highest turn seen per player, which tells who is holding the game back.
 */
export class LockstepRelay {
  readonly players: number;
  readonly counters: RelayCounters = { forwarded: 0, spoofed: 0, malformed: 0 };
  readonly #send: (toPlayer: number, bytes: Uint8Array) => void;
  readonly #maxCommandBytes: number;
  readonly #highest: number[];

  constructor(options: { players: number; maxCommandBytes?: number }, send: (toPlayer: number, bytes: Uint8Array) => void) {
    if (!(Number.isInteger(options.players) && options.players >= 2 && options.players <= 64)) {
      throw new LockstepUsageError(`players must be an integer in 2..64, got ${options.players}`);
    }
    this.players = options.players;
    this.#maxCommandBytes = checkCommandBytes(options.maxCommandBytes ?? 4096);
    this.#highest = new Array<number>(this.players).fill(-1);
    this.#send = send;
  }

  receive(fromPlayer: number, bytes: Uint8Array): void {
    const m = decodeNetTurn(bytes, this.players, this.#maxCommandBytes);
    if (m === undefined) {
      this.counters.malformed++;
      return;
    }
    if (m.player !== fromPlayer) {
      this.counters.spoofed++;
      return;
    }
    if (m.turn > this.#highest[fromPlayer]!) this.#highest[fromPlayer] = m.turn;
    // Each recipient but the last gets its own copy: a send that takes the buffer (ackwire/worker
    // with transferOnSend detaches it) must not empty it for the next one.
    const last = fromPlayer === this.players - 1 ? this.players - 2 : this.players - 1;
    for (let p = 0; p < this.players; p++) {
      if (p === fromPlayer) continue;
      this.counters.forwarded++;
      this.#send(p, p === last ? bytes : bytes.slice());
    }
  }

  /** The players whose latest batch is for the lowest turn: the ones the others wait for. */
  slowestPlayers(): { turn: number; players: number[] } {
    const turn = Math.min(...this.#highest);
    return { turn, players: this.#highest.flatMap((t, p) => (t === turn ? [p] : [])) };
  }
}
