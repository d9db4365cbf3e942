// NAT traversal over real NATs: two home networks behind Linux routers that masquerade and
// drop unsolicited packets (bench/lib/natlab.mjs, network namespaces + nftables), a lobby on
// the "internet" between them, a host behind router A and joiners behind router B, each its
// own process (test/interop/fixtures/nat-peer.mjs). What it shows:
// - a joiner connecting straight to the host's public address is dropped by the host's NAT;
// - through the lobby's introduction and NAT_PUNCH (src/game/nat.ts, PROTOCOL §7) it connects,
//   from Node, Bun and Deno, to hosts on Node, Bun and Deno, and every message comes back;
// - a joiner on the host's own network, where the router does not hairpin, connects through
//   the host's local address;
// - over IPv6, with no NAT but the same stateful firewalls (unsolicited packets dropped), a
//   direct connect dies at the host's firewall and introduced joiners punch through;
// - behind a symmetric NAT (a new port per destination) punching cannot work: the joiner falls
//   back to the lobby's relay (PROTOCOL §8) and connects through it, from Node, Bun and Deno;
//   told not to use the relay, it gets ConnectTimeoutError, not a hang.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatLab, natLabUnsupported } from "../../bench/lib/natlab.mjs";
import { assertBuilt, Peer, RUNTIMES, type RuntimeName } from "./helpers.js";

const skip = natLabUnsupported();
if (skip !== undefined) console.warn(`NAT traversal tests skipped: ${skip}`);

const LOBBY_PORT = 9000;
const RELAY_PORT = 9001;
const HOST_PORT = 7777;

interface Lab {
  internet: string;
  hostA: string;
  hostB: string;
  hostC: string;
  routerA: string;
  lobbyIp: string;
  publicA: string;
  localA: string;
  localB: string;
  localC: string;
  ipv6?: boolean;
  droppedAt(ns: string): number;
  close(): void;
}

/** "ip:port" as the core writes it: IPv6 in brackets. */
const at = (ip: string, port: number): string => (ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`);

interface LabKind {
  symmetricB?: boolean;
  ipv6?: boolean;
}

/** Host i (RUNTIMES order: node, bun, deno) listens on HOST_PORT + i as "host-<runtime>". */
const hostPort = (runtime: RuntimeName): number => HOST_PORT + RUNTIMES.indexOf(runtime);

/** The lab, its lobby and one host per runtime behind router A, up and registered. */
async function start(kind: LabKind): Promise<{ lab: Lab; peers: Peer[] }> {
  assertBuilt();
  const lab = new NatLab(kind.ipv6 === true ? "nat6" : kind.symmetricB === true ? "nats" : "natc", kind) as Lab;
  const peers: Peer[] = [];
  try {
    const lobby = new Peer("node", "nat-peer.mjs", ["lobby", JSON.stringify({ host: lab.lobbyIp, port: LOBBY_PORT, relayPort: RELAY_PORT })], 120_000, lab.internet);
    peers.push(lobby);
    await lobby.waitFor("listening");
    const hosts = RUNTIMES.map((runtime) => {
      const options = { port: hostPort(runtime), name: `host-${runtime}`, lobby: at(lab.lobbyIp, LOBBY_PORT), localIp: lab.localA, ipv6: lab.ipv6 === true };
      const host = new Peer(runtime, "nat-peer.mjs", ["host", JSON.stringify(options)], 120_000, lab.hostA);
      peers.push(host);
      return host;
    });
    await Promise.all(hosts.map((host) => host.waitFor("registered")));
    return { lab, peers };
  } catch (error) {
    for (const p of peers) p.stop();
    lab.close();
    throw error;
  }
}

/** Starts the lab, its lobby and its host before the describe block's tests; stops them after. */
function useLab(kind: LabKind): { lab: Lab } {
  const running = {} as { lab: Lab; peers: Peer[] };
  beforeAll(async () => {
    Object.assign(running, await start(kind));
  }, 60_000);
  afterAll(() => {
    for (const p of running.peers ?? []) p.stop();
    running.lab?.close();
  });
  return running;
}

async function join(runtime: RuntimeName, lab: Lab, mode: "nat" | "direct", where: "B" | "C" = "B", relay = true, host: RuntimeName = "node"): Promise<Record<string, unknown>> {
  const [ns, localIp] = where === "B" ? [lab.hostB, lab.localB] : [lab.hostC, lab.localC];
  const options = { mode, lobby: at(lab.lobbyIp, LOBBY_PORT), localIp, relay, hostName: `host-${host}`, ipv6: lab.ipv6 === true };
  const joiner = new Peer(runtime, "nat-peer.mjs", ["joiner", JSON.stringify(options)], 40_000, ns);
  try {
    return await joiner.waitFor("ok", 30_000);
  } finally {
    joiner.stop();
  }
}

/** A node joiner on B that must fail with ConnectTimeoutError; how many packets router A dropped meanwhile. */
async function timedOutJoin(lab: Lab, mode: "nat" | "direct", relay = true): Promise<number> {
  const before = lab.droppedAt(lab.routerA);
  const result = await join("node", lab, mode, "B", relay);
  expect(result).toMatchObject({ ok: false, error: { code: "ERR_CONNECT_TIMEOUT" } });
  return lab.droppedAt(lab.routerA) - before;
}

describe.skipIf(skip !== undefined)("through two home-router NATs (netns + nftables: masquerade, unsolicited packets dropped)", () => {
  const running = useLab({});

  it("a joiner connecting straight to the host's public address is dropped by the host's NAT", async () => {
    // Every handshake attempt died at router A's filter.
    expect(await timedOutJoin(running.lab, "direct")).toBeGreaterThanOrEqual(3);
  }, 40_000);

  for (const runtime of RUNTIMES) {
    it(`${runtime} joiner: introduced by the lobby, it punches through both NATs and every message echoes`, async () => {
      const { lab } = running;
      const result = await join(runtime, lab, "nat");
      expect(result, JSON.stringify(result)).toMatchObject({ ok: true, echoed: 50 });
      // The host's public address (router A's, the port the host bound: a cone NAT keeps it).
      expect(result.via).toBe(`${lab.publicA}:${hostPort("node")}`);
      expect(result.listed).toBe(result.via);
      // It connected because a punch came through, not by falling back to the listed address
      // after natConnect's 2 s wait.
      expect(result.punches as number).toBeGreaterThan(0);
      expect(result.connectMs as number).toBeLessThan(2000);
    }, 40_000);
  }

  for (const host of RUNTIMES.filter((r) => r !== "node")) {
    it(`a ${host} host: it registers, punches back from its listening socket, and a node joiner's messages echo`, async () => {
      const { lab } = running;
      const result = await join("node", lab, "nat", "B", true, host);
      expect(result, JSON.stringify(result)).toMatchObject({ ok: true, echoed: 50, via: `${lab.publicA}:${hostPort(host)}` });
      expect(result.punches as number).toBeGreaterThan(0);
      expect(result.connectMs as number).toBeLessThan(2000);
    }, 40_000);
  }

  it("a joiner on the host's own network (router A does not hairpin) connects to the host's local address", async () => {
    const { lab } = running;
    const direct = await join("node", lab, "direct", "C");
    expect(direct).toMatchObject({ ok: false, error: { code: "ERR_CONNECT_TIMEOUT" } });
    const result = await join("node", lab, "nat", "C");
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, echoed: 50, via: `${lab.localA}:${hostPort("node")}` });
    expect(result.punches as number).toBeGreaterThan(0);
  }, 40_000);
});

describe.skipIf(skip !== undefined)("behind a symmetric NAT (router B: a random port per destination)", () => {
  const running = useLab({ symmetricB: true });

  it("punching cannot open a path: without the relay, natConnect fails with ConnectTimeoutError instead of hanging", async () => {
    // Router A dropped B's punches and handshakes: they came from ports it never punched to.
    expect(await timedOutJoin(running.lab, "nat", false)).toBeGreaterThan(5);
  }, 40_000);

  for (const runtime of RUNTIMES) {
    it(`${runtime} joiner: no punch gets through, the direct handshake times out, and it connects through the lobby's relay`, async () => {
      const { lab } = running;
      const before = lab.droppedAt(lab.routerA);
      const result = await join(runtime, lab, "nat");
      expect(result, JSON.stringify(result)).toMatchObject({ ok: true, echoed: 50 });
      // Through the relay: the host is reached at a virtual address (100::/64, the relay's port).
      expect(result.via).toMatch(new RegExp(`^\\[100::[0-9a-f:]+\\]:${RELAY_PORT}$`));
      expect(result.punches).toBe(0);
      // After the 2 s punch wait and the 2 s direct attempt, which router A dropped.
      expect(result.connectMs as number).toBeGreaterThan(3500);
      expect(lab.droppedAt(lab.routerA) - before).toBeGreaterThan(0);
    }, 40_000);
  }

  for (const host of RUNTIMES.filter((r) => r !== "node")) {
    it(`a ${host} host: it routes and binds the relay from its listening socket, and a node joiner connects through it`, async () => {
      const result = await join("node", running.lab, "nat", "B", true, host);
      expect(result, JSON.stringify(result)).toMatchObject({ ok: true, echoed: 50, punches: 0 });
      expect(result.via).toMatch(new RegExp(`^\\[100::[0-9a-f:]+\\]:${RELAY_PORT}$`));
    }, 40_000);
  }
});

describe.skipIf(skip !== undefined)("IPv6 behind two home-router firewalls (no NAT: stateful filtering, unsolicited packets dropped)", () => {
  const running = useLab({ ipv6: true });

  it("a joiner connecting straight to the host's global address is dropped by the host's firewall", async () => {
    expect(await timedOutJoin(running.lab, "direct")).toBeGreaterThanOrEqual(3);
  }, 40_000);

  for (const runtime of RUNTIMES) {
    it(`${runtime} joiner: introduced by the lobby over IPv6, it punches through both firewalls and every message echoes`, async () => {
      const { lab } = running;
      const result = await join(runtime, lab, "nat");
      expect(result, JSON.stringify(result)).toMatchObject({ ok: true, echoed: 50, via: at(lab.publicA, hostPort("node")) });
      expect(result.punches as number).toBeGreaterThan(0);
      expect(result.connectMs as number).toBeLessThan(2000);
    }, 40_000);
  }

  it("a deno host punches back over IPv6 too", async () => {
    const result = await join("node", running.lab, "nat", "B", true, "deno");
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, echoed: 50, via: at(running.lab.publicA, hostPort("deno")) });
  }, 40_000);
});
