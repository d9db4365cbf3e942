// examples/agones/ run as far as this machine can: the game server and the backend as their own
// processes, unchanged, with the official Agones SDK talking gRPC to a stand-in sidecar on
// 127.0.0.1 (agones-sidecar.ts) and the backend allocating from a stand-in for the Kubernetes
// API; real ackwire clients (in this process, and examples/agones/client.mjs) connect over
// loopback with the backend's tokens. What this cannot run, a cluster, is said in docs/FLEET.md.
// The manifests are parsed and checked against the code's names and ports.
import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { createServer, type Server as HttpServer } from "node:http";
import { createSocket } from "node:dgram";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { connect, ConnectDeniedError, ConnectTimeoutError, createConnectToken, generateServerKey, type Connection } from "../../src/index.js";
import { FakeSidecar } from "./agones-sidecar.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const example = join(root, "examples", "agones");
const PROTOCOL_ID = 0x41474e53;
const serverKey = generateServerKey();
const keyText = Buffer.from(serverKey).toString("base64");

// The example as a user has it: its files in a folder whose node_modules holds ackwire (this
// checkout, built) and the SDK (the repository's devDependency, with its own dependencies).
const work = mkdtempSync(join(tmpdir(), "ackwire-agones-"));
beforeAll(() => {
  for (const name of readdirSync(example)) copyFileSync(join(example, name), join(work, name));
  mkdirSync(join(work, "node_modules", "@google-cloud"), { recursive: true });
  symlinkSync(root, join(work, "node_modules", "ackwire"), "dir");
  symlinkSync(join(root, "node_modules", "@google-cloud", "agones-sdk"), join(work, "node_modules", "@google-cloud", "agones-sdk"), "dir");
});

interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | string>;
}
const running: Running[] = [];
const cleanups: (() => void)[] = [];

function run(script: string, args: string[], env: Record<string, string>): Running {
  const child = spawn(process.execPath, [script, ...args], { cwd: work, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | string>((ok) => child.on("exit", (code, signal) => ok(code ?? signal ?? "unknown")));
  const r = { child, output: () => output, exited };
  running.push(r);
  return r;
}

async function printed(r: Running, pattern: RegExp, ms = 20_000): Promise<RegExpMatchArray> {
  const deadline = Date.now() + ms;
  for (;;) {
    const m = pattern.exec(r.output());
    if (m) return m;
    if (r.child.exitCode !== null) throw new Error(`exited (${r.child.exitCode}) before printing ${pattern}:\n${r.output()}`);
    if (Date.now() > deadline) throw new Error(`no ${pattern} within ${ms} ms:\n${r.output()}`);
    await new Promise((ok) => setTimeout(ok, 20));
  }
}

async function exitCode(r: Running, ms = 20_000): Promise<number | string> {
  const timer = setTimeout(() => r.child.kill("SIGKILL"), ms);
  const code = await r.exited;
  clearTimeout(timer);
  return code;
}

async function freeUdpPort(): Promise<number> {
  const s = createSocket("udp4");
  await new Promise<void>((ok) => s.bind(0, "127.0.0.1", () => ok()));
  const { port } = s.address();
  await new Promise<void>((ok) => s.close(() => ok()));
  return port;
}

afterEach(async () => {
  for (const r of running.splice(0)) {
    if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGKILL");
    await r.exited;
  }
  for (const c of cleanups.splice(0)) c();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A GameServer of fleet "ackwire-game" on this machine, its sidecar, and its game server process. */
async function startGameServer(capacity: number, allocationWaitMs: number): Promise<{ sidecar: FakeSidecar; game: Running; port: number }> {
  const port = await freeUdpPort();
  const sidecar = new FakeSidecar({ name: "ackwire-game-x7k2p", address: "127.0.0.1", ports: { game: port }, lists: { players: capacity }, labels: { "agones.dev/fleet": "ackwire-game" } });
  await sidecar.start();
  cleanups.push(() => sidecar.stop());
  const game = run("gameserver.mjs", [], {
    AGONES_SDK_GRPC_PORT: String(sidecar.port),
    ACKWIRE_SERVER_KEY: keyText,
    // In a pod the container port and the node's host port differ; here one process holds both.
    GAME_PORT: String(port),
    HEALTH_INTERVAL_MS: "100",
    EMPTY_SHUTDOWN_MS: "300",
    ALLOCATION_WAIT_MS: String(allocationWaitMs),
  });
  await printed(game, /^ready: /m);
  return { sidecar, game, port };
}

/**
 * The Kubernetes API's allocation endpoint for one GameServer: the request's selectors are
 * tried in order as Agones does (fleet label, state, List room), and a match is allocated.
 */
async function fakeKubernetes(sidecar: FakeSidecar): Promise<{ url: string; requests: { path: string; body: any }[] }> {
  const requests: { path: string; body: any }[] = [];
  const http: HttpServer = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text);
    requests.push({ path: req.url!, body });
    const fits = (s: any): boolean =>
      Object.entries(s.matchLabels ?? {}).every(([k, v]) => sidecar.labels.get(k) === v) &&
      (s.gameServerState ?? "Ready") === sidecar.state &&
      Object.entries(s.lists ?? {}).every(([name, want]: [string, any]) => {
        const l = sidecar.lists.get(name);
        return l !== undefined && l.capacity - l.values.length >= (want.minAvailableCapacity ?? 0);
      });
    const chosen = (body.spec.selectors as any[]).some(fits);
    if (chosen && sidecar.state !== "Allocated") sidecar.setState("Allocated");
    const status = chosen
      ? { state: "Allocated", gameServerName: sidecar.options.name, address: sidecar.options.address, ports: Object.entries(sidecar.options.ports).map(([name, port]) => ({ name, port })) }
      : { state: "UnAllocated" };
    res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ ...body, status }));
  });
  await new Promise<void>((ok) => http.listen(0, "127.0.0.1", () => ok()));
  cleanups.push(() => http.close());
  const { port } = http.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, requests };
}

async function startBackend(kubernetesUrl: string): Promise<string> {
  const backend = run("backend.mjs", [], { ACKWIRE_SERVER_KEY: keyText, K8S_API_URL: kubernetesUrl, NAMESPACE: "default", HOST: "127.0.0.1", PORT: "0" });
  return (await printed(backend, /^backend on (http:\S+)/m))[1];
}

async function askToJoin(backend: string, playerId: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${backend}/join`, { method: "POST", body: JSON.stringify({ playerId }) });
  return { status: res.status, body: await res.json() };
}

/** Connects as the backend's answer says; resolves with the connection and its first chat line. */
async function play(answer: { server: string; token: string }): Promise<{ conn: Connection; welcome: string }> {
  const conn = await connect(answer.server, { protocolId: PROTOCOL_ID, connectToken: new Uint8Array(Buffer.from(answer.token, "base64url")) });
  const welcome = await new Promise<string>((ok) => conn.on("message", (m) => m.channel === 0 && ok(new TextDecoder().decode(m.data))));
  return { conn, welcome };
}

const listCalls = (sidecar: FakeSidecar): string[] => sidecar.calls.filter((c) => c.call.endsWith("ListValue")).map((c) => `${c.call === "AddListValue" ? "+" : "-"}${c.value}`);

describe("examples/agones", () => {
  it("tells Agones Ready, health, each player and Shutdown at their moments; admits only the backend's players", async () => {
    const { sidecar, game, port } = await startGameServer(2, 300);
    const calls = () => sidecar.calls.map((c) => c.call);
    // Start-up: the address first (the tokens must name it), then Ready; health keeps coming.
    expect(calls().indexOf("GetGameServer")).toBeLessThan(calls().indexOf("Ready"));
    expect(sidecar.state).toBe("Ready");
    const readyAt = calls().indexOf("Ready");
    await sidecar.waitFor((c) => c.call === "Health", 10_000, readyAt);

    // A Ready server admits nobody, even with a good token: it is not allocated yet.
    const early = createConnectToken({ serverKey, protocolId: PROTOCOL_ID, clientId: 7, serverAddresses: [`127.0.0.1:${port}`] });
    const refused = await connect(`127.0.0.1:${port}`, { protocolId: PROTOCOL_ID, connectToken: early }).then(() => undefined, (e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectDeniedError);
    expect((refused as ConnectDeniedError).deny).toBe("refused");
    expect(listCalls(sidecar)).toEqual([]);

    const kubernetes = await fakeKubernetes(sidecar);
    const backend = await startBackend(kubernetes.url);

    // Two players through the backend: it allocates the server, then mints a token for its address.
    const first = await askToJoin(backend, "1001");
    expect(first.status).toBe(200);
    expect(first.body.server).toBe(`127.0.0.1:${port}`);
    expect(sidecar.state).toBe("Allocated");
    await printed(game, /^state: Allocated$/m);
    const p1 = await play(first.body);
    expect(p1.welcome).toBe("welcome 1001: 1 of 2 players");
    const p2 = await play((await askToJoin(backend, "1002")).body);
    expect(p2.welcome).toBe("welcome 1002: 2 of 2 players");
    await sidecar.waitFor((c) => c.call === "AddListValue" && c.value === "1002", 10_000);
    expect(sidecar.lists.get("players")!.values.sort()).toEqual(["1001", "1002"]);

    // The allocation asked for this fleet, a busy server with a free slot first, then a Ready one.
    const spec = kubernetes.requests[0].body.spec;
    expect(kubernetes.requests[0].path).toBe("/apis/allocation.agones.dev/v1/namespaces/default/gameserverallocations");
    expect(spec.selectors.map((s: any) => [s.matchLabels["agones.dev/fleet"], s.gameServerState, s.lists?.players?.minAvailableCapacity])).toEqual([
      ["ackwire-game", "Allocated", 1],
      ["ackwire-game", "Ready", undefined],
    ]);

    // A token minted for another server of the fleet (same key) does not open here.
    const elsewhere = createConnectToken({ serverKey, protocolId: PROTOCOL_ID, clientId: 5, serverAddresses: ["127.0.0.1:9"] });
    await expect(connect(`127.0.0.1:${port}`, { protocolId: PROTOCOL_ID, connectToken: elsewhere, connectTimeoutMs: 600 })).rejects.toThrow(ConnectTimeoutError);

    // Full: the backend finds no server (503), and the game server itself turns a token away.
    const full = await askToJoin(backend, "1003");
    expect(full.status).toBe(503);
    const extra = createConnectToken({ serverKey, protocolId: PROTOCOL_ID, clientId: 1003, serverAddresses: [`127.0.0.1:${port}`] });
    const denied = await connect(`127.0.0.1:${port}`, { protocolId: PROTOCOL_ID, connectToken: extra }).then(() => undefined, (e: unknown) => e);
    expect((denied as ConnectDeniedError).deny).toBe("server-full");

    // A leave frees the slot; the example's own client takes it, sends inputs, and leaves.
    const leftAt = sidecar.calls.length;
    await p2.conn.close();
    await sidecar.waitFor((c) => c.call === "RemoveListValue" && c.value === "1002", 10_000, leftAt);
    const client = run("client.mjs", [backend, "1003", "0.3"], {});
    expect(await exitCode(client), client.output()).toBe(0);
    expect(client.output()).toMatch(new RegExp(`^joined 127\\.0\\.0\\.1:${port}: welcome 1003: 2 of 2 players$`, "m"));
    expect(client.output()).toMatch(/^left$/m);
    const inputs = Number((await printed(game, /^player 1003 left \(normal\), (\d+) inputs$/m))[1]);
    expect(inputs).toBeGreaterThan(0);
    expect(sidecar.state).toBe("Allocated"); // 1001 still plays

    // The last player leaves: the match is over, and only then Shutdown.
    const lastAt = sidecar.calls.length;
    await p1.conn.close();
    const shutdown = await sidecar.waitFor((c) => c.call === "Shutdown", 10_000, lastAt);
    expect(shutdown.state).toBe("Shutdown");
    expect(await exitCode(game), game.output()).toBe(0);
    expect(game.output()).toMatch(/^stopping: match over: no players$/m);

    expect(listCalls(sidecar)).toEqual(["+1001", "+1002", "-1002", "+1003", "-1003", "-1001"]);
    const order = calls();
    expect(order.filter((c) => c === "Ready" || c === "Shutdown" || c.endsWith("ListValue")).at(-1)).toBe("Shutdown");
    expect(order.indexOf("Ready")).toBeLessThan(order.indexOf("AddListValue"));
    expect(order.filter((c) => c === "Shutdown")).toHaveLength(1);
    expect(sidecar.lists.get("players")!.values).toEqual([]);
  }, 60_000);

  it("admits a handshake that comes before its allocation; on SIGTERM ends its players' connections and exits", async () => {
    const { sidecar, game, port } = await startGameServer(4, 1500);
    const token = createConnectToken({ serverKey, protocolId: PROTOCOL_ID, clientId: 42, serverAddresses: [`127.0.0.1:${port}`] });
    // The handshake arrives before the allocation does: the accept hook waits for it.
    const connecting = connect(`127.0.0.1:${port}`, { protocolId: PROTOCOL_ID, connectToken: token });
    await new Promise((ok) => setTimeout(ok, 100));
    sidecar.setState("Allocated"); // allocated by someone else's backend
    const conn = await connecting;
    await printed(game, /^state: Allocated$/m);
    await sidecar.waitFor((c) => c.call === "AddListValue" && c.value === "42", 10_000);
    game.child.kill("SIGTERM");
    expect((await conn.closed).reason).toBe("server-shutdown");
    expect(await exitCode(game), game.output()).toBe(0);
    expect(game.output()).toMatch(/^stopping: SIGTERM$/m);
    await sidecar.waitFor((c) => c.call === "Shutdown", 10_000);
  }, 60_000);
});

describe("examples/agones manifests", () => {
  const docs = (file: string): any[] => parseAllDocuments(readFileSync(join(example, file), "utf8")).map((d) => d.toJS());
  const fleetFile = docs("fleet.yaml");
  const fleet = fleetFile.find((d) => d.kind === "Fleet");
  const gameServer = docs("gameserver.yaml").find((d) => d.kind === "GameServer");
  const backendFile = docs("backend.yaml");

  it("give every GameServer one UDP port named as the code reads it, its players List and the key", () => {
    for (const spec of [fleet.spec.template.spec, gameServer.spec]) {
      expect(spec.ports).toEqual([{ name: "game", portPolicy: "Dynamic", containerPort: 7777, protocol: "UDP" }]);
      expect(Object.keys(spec.lists)).toEqual(["players"]);
      expect(spec.lists.players.capacity).toBeGreaterThan(0);
      const container = spec.template.spec.containers[0];
      const env = Object.fromEntries(container.env.map((e: any) => [e.name, e]));
      expect(env.GAME_PORT.value).toBe("7777");
      expect(env.ACKWIRE_SERVER_KEY.valueFrom.secretKeyRef).toEqual({ name: "ackwire-server-key", key: "key" });
      // Long enough for server.close() to tell every client (closeTimeoutMs, 3 s by default).
      expect(spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(5);
    }
    const autoscaler = fleetFile.find((d) => d.kind === "FleetAutoscaler");
    expect(autoscaler.spec.fleetName).toBe(fleet.metadata.name);
    expect(autoscaler.spec.policy.type).toBe("List");
    expect(autoscaler.spec.policy.list.key).toBe("players");
  });

  it("let the backend create GameServerAllocations for that fleet, with the same key", () => {
    const deployment = backendFile.find((d) => d.kind === "Deployment");
    const container = deployment.spec.template.spec.containers[0];
    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e]));
    expect(env.FLEET.value).toBe(fleet.metadata.name);
    expect(env.ACKWIRE_SERVER_KEY.valueFrom.secretKeyRef).toEqual({ name: "ackwire-server-key", key: "key" });
    expect(container.command).toEqual(["node", "backend.mjs"]);
    const role = backendFile.find((d) => d.kind === "Role");
    expect(role.rules).toContainEqual({ apiGroups: ["allocation.agones.dev"], resources: ["gameserverallocations"], verbs: ["create"] });
    const binding = backendFile.find((d) => d.kind === "RoleBinding");
    expect(binding.roleRef.name).toBe(role.metadata.name);
    expect(binding.subjects[0].name).toBe(deployment.spec.template.spec.serviceAccountName);
  });

  it("pin the SDK the repository tests against", () => {
    const examplePkg = JSON.parse(readFileSync(join(example, "package.json"), "utf8"));
    const rootPkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    expect(examplePkg.dependencies["@google-cloud/agones-sdk"]).toBe(rootPkg.devDependencies["@google-cloud/agones-sdk"]);
    expect(rootPkg.dependencies ?? {}).toEqual({});
  });
});
