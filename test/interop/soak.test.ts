// The soak (bench/soak/soak.ts), short and with fast churn, on Node, Bun and Deno, and secure
// on Node: client lives come and go through the impairment proxy (loss, jitter that reorders,
// duplicates, flipped bits, NAT rebindings); some say goodbye, some vanish. It must exit 0 with
// no failure line, and the run must really have had the churn and the impairments it claims.
// The long runs (10 minutes and more, memory judged): npm run soak (bench/README.md).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runDemo } from "../demo/run-demo.js";
import { MAIN_NODE_RUN, ROOT } from "./helpers.js";

const SOAK = join(ROOT, "dist", "bench", "soak", "soak.js");
const bin = (name: string): string => join(ROOT, "node_modules", ".bin", name);
const SHORT = ["--seconds", "14", "--clients", "6", "--min-life", "1", "--max-life", "5", "--timeout-ms", "2000", "--rebind", "4", "--sample", "5", "--seed", "3"];
/** Above the soak's own hard deadline for these flags (its bound is what is tested). */
const CHILD_LIMIT_MS = 110_000;

const NODE_COMMANDS: Record<string, [string, string[]]> = {
  node: [process.execPath, ["--expose-gc", SOAK, ...SHORT]],
  "node, secure": [process.execPath, ["--expose-gc", SOAK, ...SHORT, "--secure"]],
};
/** The Bun and Deno soaks run nothing on the Node that runs vitest (MAIN_NODE_RUN). */
const COMMANDS: Record<string, [string, string[]]> = {
  ...NODE_COMMANDS,
  ...(MAIN_NODE_RUN
    ? {
        bun: [bin("bun"), [SOAK, ...SHORT]],
        deno: [bin("deno"), ["run", "-A", "--unstable-net", "--v8-flags=--expose-gc", SOAK, ...SHORT]],
      }
    : {}),
};

interface SoakResult {
  ok: boolean;
  lives: { started: number; graceful: number; vanished: number; connectFailures: number; rebinds: number };
  streams: Record<string, { sent: number; arrived: number }>;
  proxy: { toServer: { lost: number; duplicated: number; corrupted: number }; toClients: { lost: number; duplicated: number; corrupted: number }; vanishedDropped: number };
  memory: { gcForced: boolean; samples: number };
  failures: number;
  failureLines: string[];
}

describe("soak, short", () => {
  it("the built soak exists (npm test builds it)", () => {
    expect(existsSync(SOAK)).toBe(true);
  });

  for (const [name, [command, args]] of Object.entries(COMMANDS)) {
    it(`${name}: lives come and go on a bad network; every promise holds`, async () => {
      const run = await runDemo(command, args, CHILD_LIMIT_MS);
      const context = `${name}\nstdout:\n${run.stdout.slice(-4000)}\nstderr:\n${run.stderr.slice(-2000)}`;
      expect(run.killed, context).toBe(false);
      const line = run.stdout.split("\n").find((l) => l.startsWith("SOAK_RESULT "));
      expect(line, context).toBeDefined();
      const r = JSON.parse(line!.slice("SOAK_RESULT ".length)) as SoakResult;
      expect(r.failureLines, context).toEqual([]);
      expect(r.ok, context).toBe(true);
      expect(run.code, context).toBe(0);
      // The churn happened: lives ended both ways, and the NAT rebound.
      expect(r.lives.started, context).toBeGreaterThanOrEqual(12);
      expect(r.lives.graceful, context).toBeGreaterThanOrEqual(3);
      expect(r.lives.vanished, context).toBeGreaterThanOrEqual(1);
      expect(r.lives.rebinds, context).toBeGreaterThanOrEqual(2);
      expect(r.proxy.vanishedDropped, context).toBeGreaterThan(0);
      // Every stream carried traffic, and the impairments were there.
      for (const [stream, s] of Object.entries(r.streams)) {
        expect(s.arrived, `${stream}\n${context}`).toBeGreaterThan(0);
        expect(s.arrived, `${stream}\n${context}`).toBeLessThanOrEqual(s.sent);
      }
      const p = r.proxy;
      expect(p.toServer.lost + p.toClients.lost, context).toBeGreaterThan(0);
      expect(p.toServer.duplicated + p.toClients.duplicated, context).toBeGreaterThan(0);
      expect(p.toServer.corrupted + p.toClients.corrupted, context).toBeGreaterThan(0);
      expect(r.memory.samples, context).toBeGreaterThanOrEqual(3);
      expect(r.memory.gcForced, context).toBe(true);
    });
  }
});
