// The demo as a user runs it: the compiled dist/demo/main.js as a child process (stdout piped,
// so the plain non-TTY output), short version, on Node, Bun and Deno. It must exit 0 and its
// summary must account for every reliable message.
import { beforeAll, describe, expect, it } from "vitest";
import { parseDemoArgs, DemoUsageError } from "../../demo/args.js";
import { decodeChat, decodeMove, decodeState, encodeChat, encodeMove, encodeState } from "../../demo/payloads.js";
import { bin, demoMain, ensureDemoBuilt, parseSummary, runDemo, type DemoRun } from "./run-demo.js";
import { MAIN_NODE_RUN } from "../interop/helpers.js";

const CLIENTS = 3;
const SHORT = ["--duration", "4", "--clients", String(CLIENTS), "--seed", "7"];
/** Above the demo's own hard deadline for this length, so the demo's bound is what is tested. */
const CHILD_LIMIT_MS = 58_000;

function expectPass(run: DemoRun, label: string): void {
  const context = `${label} (seed 7)\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
  expect(run.killed, context).toBe(false);
  expect(run.code, context).toBe(0);
  const s = parseSummary(run.stdout);
  expect(s.result, context).toBe("PASS");
  expect(s.clientRows, context).toBe(CLIENTS);
  // 3 clients x 10 Hz x 4 s of chat up, each relayed to 3 clients, plus the bulk: well over 100.
  expect(s.reliable.sent, context).toBeGreaterThan(100);
  expect(s.reliable.arrived, context).toBe(s.reliable.sent);
  expect(s.reliable.inOrder, context).toBe(s.reliable.sent);
  expect(s.reliable.lost, context).toBe(0);
  expect(s.reliable.outOfOrder, context).toBe(0);
  expect(s.bulkVerified, context).toBe(true);
  expect(s.stateKeys, context).toBeGreaterThan(0);
  expect(s.stateConverged, context).toBe(s.stateKeys);
  expect(s.corrupt + s.stale, context).toBe(0);
  // The impairment really was there: the proxy dropped some datagrams each way.
  const dropped = run.stdout.match(/to server (\d+)\/(\d+) datagrams dropped .*to clients (\d+)\/(\d+)/);
  expect(dropped, context).not.toBeNull();
  expect(+dropped![1]! + +dropped![3]!, context).toBeGreaterThan(0);
}

describe("demo flags", () => {
  it("parses every flag and rejects bad ones with DemoUsageError", () => {
    const o = parseDemoArgs(["--duration", "2.5", "--clients=4", "--loss", "0", "--latency", "50", "--jitter", "3", "--seed", "9"]);
    expect(o).toMatchObject({ durationS: 2.5, clients: 4, lossPercent: 0, latencyMs: 50, jitterMs: 3, seed: 9, secure: false, help: false });
    expect(parseDemoArgs(["--secure", "--clients", "2"])).toMatchObject({ secure: true, clients: 2 });
    expect(parseDemoArgs(["--browser"])).toMatchObject({ browser: true, secure: false });
    expect(parseDemoArgs([]).clients).toBe(8);
    // A rebinding inside the run, or none (0); one past its end would silently never happen.
    expect(parseDemoArgs(["--duration", "10", "--rebind-at", "9.5"]).rebindAtS).toBe(9.5);
    expect(parseDemoArgs(["--rebind-at", "0"]).rebindAtS).toBe(0);
    for (const bad of [["--clients", "0"], ["--clients", "2.5"], ["--loss", "x"], ["--duration"], ["--nope"], ["--seed", "1", "--seed", "2"], ["--latency", ""], ["--secure", "--secure"], ["--secure=1"], ["--browser", "--browser"], ["--duration", "10", "--rebind-at", "12"], ["--rebind-at", "20"]]) {
      expect(() => parseDemoArgs(bad), bad.join(" ")).toThrow(DemoUsageError);
    }
  });
});

describe("demo payloads check themselves", () => {
  it("a flipped bit in any byte is detected", () => {
    const samples = [encodeMove(2, 77), encodeChat(5, { origin: 1, seq: 9, relaySeq: 3 }), encodeState({ client: 1, key: 4, version: 6, value: 12345 })];
    const decoders = [(b: Uint8Array) => decodeMove(b), (b: Uint8Array) => decodeChat(5, b), (b: Uint8Array) => decodeState(b)];
    samples.forEach((sample, k) => {
      expect(decoders[k]!(sample)).toBeDefined();
      for (let i = 0; i < sample.length; i++) {
        const copy = sample.slice();
        copy[i]! ^= 1 << (i % 8);
        expect(decoders[k]!(copy), `payload ${k} byte ${i}`).toBeUndefined();
      }
    });
  });
});

describe("npm start (short run, piped)", () => {
  beforeAll(() => ensureDemoBuilt(), 120_000);

  it("bad flags: exit 2 with a message naming the flag", async () => {
    const run = await runDemo(process.execPath, [demoMain, "--clients", "zero"], 10_000);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--clients must be an integer");
  });

  it("node: exit 0, every reliable message arrived in order", async () => {
    expectPass(await runDemo(process.execPath, [demoMain, ...SHORT], CHILD_LIMIT_MS), "node");
  }, 60_000);

  // Bun and Deno demos run nothing on the Node that runs vitest: once per npm test (MAIN_NODE_RUN).
  if (MAIN_NODE_RUN) {
    it("bun: exit 0, every reliable message arrived in order", async () => {
      expectPass(await runDemo(bin("bun"), [demoMain, ...SHORT], CHILD_LIMIT_MS), "bun");
    }, 60_000);

    it("deno: exit 0, every reliable message arrived in order", async () => {
      const run = await runDemo(bin("deno"), ["run", "--unstable-net", "--allow-net", "--allow-read", "--allow-env", demoMain, ...SHORT], CHILD_LIMIT_MS);
      expectPass(run, "deno");
    }, 60_000);
  }

  it("node --secure: the same verdict with every datagram sealed; each client had a token, nothing was dropped", async () => {
    const run = await runDemo(process.execPath, [demoMain, ...SHORT, "--secure"], CHILD_LIMIT_MS);
    expectPass(run, "node --secure");
    const line = run.stdout.match(/secure: (\d+)\/(\d+) clients with a token, (\d+) datagrams authenticated and decrypted, (\d+) dropped, (\d+) moved/);
    expect(line, run.stdout).not.toBeNull();
    expect(+line![1]!).toBe(CLIENTS);
    expect(+line![2]!).toBe(CLIENTS);
    expect(+line![3]!).toBeGreaterThan(100);
    expect(+line![4]!).toBe(0);
    // The proxy gave every client a new port halfway: each association followed its client.
    expect(+line![5]!).toBe(CLIENTS);
  }, 60_000);
});
