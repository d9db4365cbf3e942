/**
 * Lockstep over the sans-IO Endpoint on the simulated network: 8 players through a relay and
 * 3 players peer-to-peer, under loss. Every peer must execute the same command sequence per turn
 * (hashes and bytes), and no peer may execute a turn before every player has submitted it.
 */
import { describe, expect, it } from "vitest";
import { LockstepPeer, LockstepRelay, decodeNetTurn, encodeNetTurn, type ExecutedTurn } from "../../src/game/lockstep.js";
import type { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { Network } from "../../src/sim/network.js";
import { Rng } from "../../src/sim/rng.js";
import { endpoint } from "./helpers.js";

const CHANNEL = 0; // reliable-ordered in DEFAULT_CHANNELS

/** Per-player commands for a turn, derived from the seed: some turns empty, sizes vary. */
function commandsFor(seed: number, player: number, turn: number): Uint8Array {
  const rng = new Rng(seed).fork(`${player}:${turn}`);
  const n = rng.chance(0.3) ? 0 : 1 + rng.int(24);
  return Uint8Array.from({ length: n }, () => rng.int(256));
}

interface Harness {
  net: Network<EndpointEvent>;
  peers: LockstepPeer[];
  executed: ExecutedTurn[][];
  executedAt: number[][];
  submittedAt: Map<string, number>;
  /** Route one endpoint event to the game layer; returns true if consumed. */
  tick(activePlayers?: (p: number) => boolean): void;
}

/** Runs the game loop: each frame, every peer executes what is ready, then submits for its next turn. */
function makeLoop(net: Network<EndpointEvent>, peers: LockstepPeer[], seed: number, route: () => void): Harness {
  const executed: ExecutedTurn[][] = peers.map(() => []);
  const executedAt: number[][] = peers.map(() => []);
  const submittedAt = new Map<string, number>();
  const h: Harness = {
    net,
    peers,
    executed,
    executedAt,
    submittedAt,
    tick(active = () => true) {
      net.drive({ maxTimeMs: 20, maxSteps: 100_000 });
      route();
      for (const peer of peers) {
        const p = peer.self;
        for (let t = peer.pollTurn(net.now); t !== undefined; t = peer.pollTurn(net.now)) {
          executed[p]!.push(t);
          executedAt[p]!.push(net.now);
        }
        if (active(p) && peer.canSubmit) {
          const turn = peer.nextSubmitTurn;
          submittedAt.set(`${p}:${turn}`, net.now);
          peer.submit(commandsFor(seed, p, turn));
        }
      }
    },
  };
  return h;
}

function checkAgreement(h: Harness, turns: number, seed: number, players: number): void {
  const why = `seed ${seed}`;
  for (const list of h.executed) expect(list.length, why).toBeGreaterThanOrEqual(turns);
  for (let t = 0; t < turns; t++) {
    const reference = h.executed[0]![t]!;
    expect(reference.turn, why).toBe(t);
    for (let p = 0; p < players; p++) {
      const mine = h.executed[p]![t]!;
      expect(mine.hash, `${why}: player ${p} turn ${t}`).toBe(reference.hash);
      expect(mine.commands, `${why}: player ${p} turn ${t}`).toEqual(reference.commands);
      // The commands are exactly what each player submitted.
      if (t >= h.peers[0]!.turnDelay) for (let q = 0; q < players; q++) expect(mine.commands[q]).toEqual(commandsFor(seed, q, t));
      // Never early: every player's batch for t was submitted no later than p executed t.
      if (t >= h.peers[0]!.turnDelay) {
        for (let q = 0; q < players; q++) expect(h.submittedAt.get(`${q}:${t}`)!, `${why}: turn ${t} ran early at ${p}`).toBeLessThanOrEqual(h.executedAt[p]![t]!);
      }
    }
  }
  for (const peer of h.peers) {
    for (let e = peer.pollEvent(); e !== undefined; e = peer.pollEvent()) expect(e.type, why).not.toBe("desync");
  }
}

/** A server endpoint relaying for `players` client endpoints. */
function relayed(seed: number, players: number, lossRate: number) {
  const net = new Network<EndpointEvent>({ seed, defaultLink: { latencyMs: 25, jitterMs: 10, lossRate } });
  const serverAddr = "10.0.0.1:7777";
  const server = net.addNode(serverAddr, endpoint(seed, { server: true }));
  const clients: Endpoint[] = [];
  const clientConn: number[] = [];
  for (let p = 0; p < players; p++) {
    const c = net.addNode(`10.0.1.${p + 1}:5000`, endpoint(seed * 100 + p));
    clients.push(c);
    clientConn.push(c.connect(net.now, serverAddr, { userData: new Uint8Array([p]) }));
  }
  const connOf = new Array<number>(players).fill(-1);
  const playerOf = new Map<number, number>();
  const clientUp = new Array<boolean>(players).fill(false);
  for (let i = 0; i < 500 && (connOf.includes(-1) || clientUp.includes(false)); i++) {
    net.drive({ maxTimeMs: 10, maxSteps: 100_000 });
    for (let p = 0; p < players; p++) for (const ev of net.takeEvents(`10.0.1.${p + 1}:5000`)) if (ev.type === "connect") clientUp[p] = true;
    for (const ev of net.takeEvents(serverAddr)) {
      if (ev.type === "connect") {
        connOf[ev.userData[0]!] = ev.connection;
        playerOf.set(ev.connection, ev.userData[0]!);
      }
    }
  }
  expect(connOf.includes(-1) || clientUp.includes(false), `seed ${seed}: every client connected`).toBe(false);
  const relay = new LockstepRelay({ players }, (to, bytes) => server.send(connOf[to]!, bytes, { channel: CHANNEL }));
  const peers = clients.map((c, p) => new LockstepPeer({ players, self: p, turnDelay: 3, stallAfterMs: 300 }, (bytes) => c.send(clientConn[p]!, bytes, { channel: CHANNEL })));
  const route = () => {
    for (const ev of net.takeEvents(serverAddr)) if (ev.type === "message" && ev.channel === CHANNEL) relay.receive(playerOf.get(ev.connection)!, ev.data);
    clients.forEach((_, p) => {
      for (const ev of net.takeEvents(`10.0.1.${p + 1}:5000`)) if (ev.type === "message" && ev.channel === CHANNEL) peers[p]!.receive(ev.data);
    });
  };
  return { h: makeLoop(net, peers, seed, route), relay, net };
}

describe("lockstep through a relay", () => {
  for (const [seed, players, loss] of [
    [31, 2, 0.1],
    [32, 8, 0.1],
    [33, 5, 0.2],
  ] as const) {
    it(`${players} players, ${loss * 100}% loss: same commands per turn everywhere, nothing early (seed ${seed})`, () => {
      const { h, relay, net } = relayed(seed, players, loss);
      const turns = 60;
      for (let i = 0; i < 3000 && h.executed.some((l) => l.length < turns); i++) h.tick();
      checkAgreement(h, turns, seed, players);
      expect(relay.counters.spoofed + relay.counters.malformed).toBe(0);
      let lost = 0;
      for (let p = 0; p < players; p++) lost += net.linkStats(`10.0.1.${p + 1}:5000`, "10.0.0.1:7777").lost;
      expect(lost, `seed ${seed}: the links should lose packets`).toBeGreaterThan(0);
    });
  }

  it("reports a stall naming the player who holds the turn, and executes nothing past it (seed 34)", () => {
    const seed = 34;
    const { h } = relayed(seed, 4, 0.05);
    for (let i = 0; i < 3000 && h.executed.some((l) => l.length < 20); i++) h.tick();
    // Player 2 stops submitting (its game froze); the others keep asking for turns.
    const frozenAt = h.peers[2]!.nextSubmitTurn;
    for (let i = 0; i < 100; i++) h.tick((p) => p !== 2);
    for (const peer of h.peers) {
      if (peer.self === 2) continue;
      expect(peer.nextTurn, `seed ${seed}`).toBe(frozenAt);
      const stall = peer.stall(h.net.now)!;
      expect(stall.turn).toBe(frozenAt);
      expect(stall.waitingFor).toEqual([2]);
      expect(stall.waitedMs).toBeGreaterThan(300);
      const events = [];
      for (let e = peer.pollEvent(); e !== undefined; e = peer.pollEvent()) events.push(e);
      expect(events).toEqual([expect.objectContaining({ type: "stall", turn: frozenAt, waitingFor: [2] })]);
    }
    // Player 2 comes back: the game resumes and everyone still agrees.
    for (let i = 0; i < 3000 && h.executed.some((l) => l.length < frozenAt + 20); i++) h.tick();
    checkAgreement(h, frozenAt + 20, seed, 4);
  });
});

describe("lockstep peer-to-peer (full mesh of endpoints)", () => {
  it("3 players, 10% loss: same commands per turn everywhere (seed 35)", () => {
    const seed = 35;
    const players = 3;
    const net = new Network<EndpointEvent>({ seed, defaultLink: { latencyMs: 30, jitterMs: 10, lossRate: 0.1 } });
    const addr = (p: number) => `10.0.2.${p + 1}:6000`;
    const nodes = Array.from({ length: players }, (_, p) => net.addNode(addr(p), endpoint(seed * 10 + p, { server: true })));
    // conns[p] = connection ids p holds to every other player; player i dials every j > i.
    const conns: Map<number, number>[] = nodes.map(() => new Map());
    const playerByConn: Map<number, number>[] = nodes.map(() => new Map());
    for (let i = 0; i < players; i++) {
      for (let j = i + 1; j < players; j++) {
        const id = nodes[i]!.connect(net.now, addr(j), { userData: new Uint8Array([i]) });
        conns[i]!.set(j, id);
        playerByConn[i]!.set(id, j);
      }
    }
    let up = 0; // connect events seen, on both ends of each of the 3 links
    for (let k = 0; k < 500 && up < players * (players - 1); k++) {
      net.drive({ maxTimeMs: 10, maxSteps: 100_000 });
      for (let p = 0; p < players; p++) {
        for (const ev of net.takeEvents(addr(p))) {
          if (ev.type !== "connect") continue;
          up++;
          if (!playerByConn[p]!.has(ev.connection)) {
            conns[p]!.set(ev.userData[0]!, ev.connection);
            playerByConn[p]!.set(ev.connection, ev.userData[0]!);
          }
        }
      }
    }
    expect(up, `seed ${seed}: mesh connected`).toBe(players * (players - 1));
    const peers = nodes.map(
      (node, p) => new LockstepPeer({ players, self: p, turnDelay: 2 }, (bytes) => conns[p]!.forEach((id) => node.send(id, bytes, { channel: CHANNEL }))),
    );
    const route = () => {
      for (let p = 0; p < players; p++) for (const ev of net.takeEvents(addr(p))) if (ev.type === "message" && ev.channel === CHANNEL) peers[p]!.receive(ev.data);
    };
    const h = makeLoop(net, peers, seed, route);
    for (let i = 0; i < 3000 && h.executed.some((l) => l.length < 60); i++) h.tick();
    checkAgreement(h, 60, seed, players);
  });
});

describe("lockstep rules without a network", () => {
  it("refuses to run ahead, drops junk, detects a desync from DONETURN hashes", () => {
    const sent: Uint8Array[] = [];
    const a = new LockstepPeer({ players: 2, self: 0, turnDelay: 2 }, (b) => sent.push(b));
    expect(a.pollTurn(0)?.turn).toBe(0); // the first turnDelay turns are empty
    expect(a.pollTurn(0)?.turn).toBe(1);
    expect(a.submit(new Uint8Array([1]))).toBe(2);
    expect(a.submit()).toBe(3);
    expect(a.submit()).toBe(4);
    expect(a.canSubmit).toBe(false);
    expect(() => a.submit()).toThrow(expect.objectContaining({ code: "ERR_LOCKSTEP_USAGE" }));
    expect(a.pollTurn(10)).toBeUndefined(); // player 1 has not sent turn 2
    expect(a.stall(60)).toEqual({ turn: 2, waitingFor: [1], waitedMs: 50 });

    for (const junk of [new Uint8Array(0), new Uint8Array([1, 9, 0, 0]), encodeNetTurn({ player: 7, turn: 2, doneTurn: -1, doneHash: 0, commands: new Uint8Array(0) })]) a.receive(junk);
    a.receive(encodeNetTurn({ player: 0, turn: 2, doneTurn: -1, doneHash: 0, commands: new Uint8Array(0) })); // claims to be us
    expect(a.counters.malformed).toBe(4);
    a.receive(encodeNetTurn({ player: 1, turn: 1000, doneTurn: -1, doneHash: 0, commands: new Uint8Array(0) }));
    expect(a.counters.tooFarAhead).toBe(1);

    // Player 1 says it executed turn 1 with a different hash than ours.
    a.receive(encodeNetTurn({ player: 1, turn: 2, doneTurn: 1, doneHash: 12345, commands: new Uint8Array([7]) }));
    a.receive(encodeNetTurn({ player: 1, turn: 2, doneTurn: 1, doneHash: 12345, commands: new Uint8Array([8]) }));
    expect(a.counters.duplicates).toBe(1);
    const t2 = a.pollTurn(20)!;
    expect(t2.commands).toEqual([new Uint8Array([1]), new Uint8Array([7])]);
    expect(a.pollEvent()).toMatchObject({ type: "desync", turn: 1, player: 1, theirs: 12345 });
    expect(decodeNetTurn(sent[0]!, 2, 4096)).toMatchObject({ player: 0, turn: 2, doneTurn: 1 });
  });

  /**
   * Two peers wired back to back. B submits its one allowed batch and then does not execute for a
   * while (a hitch); A runs as far as the rules let it, then both run. Returns the executed
   * turns, B's tooFarAhead, and how far past B's next turn A's batches reached.
   */
  function lagRun(turnDelay: number, maxTurnsAhead?: number) {
    const peers: LockstepPeer[] = [];
    let furthest = 0;
    for (let self = 0; self < 2; self++) {
      peers.push(
        new LockstepPeer({ players: 2, self, turnDelay, maxTurnsAhead }, (bytes) => {
          const other = peers[1 - self]!;
          if (self === 0) furthest = Math.max(furthest, decodeNetTurn(bytes, 2, 4096)!.turn - other.nextTurn);
          other.receive(bytes);
        }),
      );
    }
    const [a, b] = peers as [LockstepPeer, LockstepPeer];
    const executed = [0, 0];
    const step = (p: LockstepPeer, poll: boolean) => {
      if (poll) for (let t = p.pollTurn(0); t !== undefined; t = p.pollTurn(0)) executed[p.self]!++;
      for (let i = 0; i < 1000 && p.canSubmit; i++) p.submit();
    };
    step(b, false);
    for (let i = 0; i < 10; i++) step(a, true);
    for (let i = 0; i < 400; i++) {
      step(b, true);
      step(a, true);
    }
    return { executed, tooFarAhead: b.counters.tooFarAhead, furthest };
  }

  it("a peer lagging within the rules never deadlocks: batches reach 2*turnDelay+1 turns ahead, and are kept", () => {
    for (const turnDelay of [1, 2, 3, 8, 32, 40, 64]) {
      for (const maxTurnsAhead of [undefined, 2 * turnDelay + 1]) {
        const why = `turnDelay ${turnDelay}, maxTurnsAhead ${maxTurnsAhead}`;
        const run = lagRun(turnDelay, maxTurnsAhead);
        // The bound is reached (so it is the least that works) and never passed.
        expect(run.furthest, why).toBe(2 * turnDelay + 1);
        expect(run.tooFarAhead, why).toBe(0);
        expect(run.executed[0], why).toBeGreaterThan(300);
        expect(run.executed[1], why).toBeGreaterThan(300);
      }
    }
  });

  it("validates its options and commands with typed errors", () => {
    const make = (o: Record<string, unknown>) => () => new LockstepPeer({ players: 2, self: 0, ...o } as never, () => undefined);
    for (const o of [
      { stallAfterMs: -1 },
      { stallAfterMs: "x" },
      { stallAfterMs: NaN },
      { maxCommandBytes: -5 },
      { maxCommandBytes: 1.5 },
      { maxCommandBytes: NaN },
      { maxTurnsAhead: NaN },
      { maxTurnsAhead: 0 },
      { maxTurnsAhead: Infinity },
      { maxTurnsAhead: 4 }, // below 2 * turnDelay (2) + 1
      { turnDelay: 3, maxTurnsAhead: 6 },
    ]) {
      expect(make(o), JSON.stringify(o)).toThrow(expect.objectContaining({ code: "ERR_LOCKSTEP_USAGE" }));
    }
    expect(make({ maxTurnsAhead: 5 })).not.toThrow();
    expect(make({ stallAfterMs: 0, maxCommandBytes: 0 })).not.toThrow();
    expect(() => new LockstepRelay({ players: 2, maxCommandBytes: -1 }, () => undefined)).toThrow(expect.objectContaining({ code: "ERR_LOCKSTEP_USAGE" }));

    const sent: Uint8Array[] = [];
    const peer = new LockstepPeer({ players: 2, self: 0 }, (b) => sent.push(b));
    for (const bad of ["move 3 4", [1, 2, 3], { x: 1 }, null, new Uint16Array(2)]) {
      expect(() => peer.submit(bad as never), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: "ERR_LOCKSTEP_USAGE" }));
    }
    expect(sent).toEqual([]);
    expect(peer.nextSubmitTurn).toBe(2);
    expect(peer.submit(new Uint8Array([1]))).toBe(2);
  });

  it("the relay gives each recipient bytes of its own: a send that takes the buffer (ackwire/worker's transferOnSend) leaves the others theirs", () => {
    const got: number[][] = [];
    const relay = new LockstepRelay({ players: 4 }, (to, bytes) => {
      got[to] = [...bytes];
      structuredClone(bytes.buffer, { transfer: [bytes.buffer as ArrayBuffer] }); // detaches it, as a transfer does
    });
    const batch = encodeNetTurn({ player: 1, turn: 3, doneTurn: 2, doneHash: 7, commands: Uint8Array.of(5, 6) });
    relay.receive(1, batch.slice());
    expect(relay.counters.forwarded).toBe(3);
    expect([got[0], got[2], got[3]]).toEqual([[...batch], [...batch], [...batch]]);
  });

  it("the relay drops spoofed batches", () => {
    const out: [number, Uint8Array][] = [];
    const relay = new LockstepRelay({ players: 3 }, (to, b) => out.push([to, b]));
    relay.receive(1, encodeNetTurn({ player: 2, turn: 5, doneTurn: -1, doneHash: 0, commands: new Uint8Array(0) }));
    expect(relay.counters.spoofed).toBe(1);
    relay.receive(1, encodeNetTurn({ player: 1, turn: 5, doneTurn: -1, doneHash: 0, commands: new Uint8Array(0) }));
    expect(out.map(([to]) => to)).toEqual([0, 2]);
    expect(relay.slowestPlayers()).toEqual({ turn: -1, players: [0, 2] });
  });
});
