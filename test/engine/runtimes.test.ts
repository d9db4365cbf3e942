// The WASM engine loads and round-trips a packet on Bun and Deno (and Node), using the
// installed binaries on the compiled dist/ output. Each run first reports which runtime it is.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");
const script = join("test", "engine", "runtime-smoke.mjs");
const commands: Record<string, string[]> = {
  node: [process.execPath, script],
  bun: [join(root, "node_modules", ".bin", "bun"), script],
  deno: [join(root, "node_modules", ".bin", "deno"), "run", "--allow-read", "--allow-env", script],
};

beforeAll(() => {
  // `npm test` builds first (pretest); this keeps a direct `vitest run test/engine` honest too.
  spawnSync(process.execPath, ["scripts/build.mjs", "--if-needed"], { cwd: root, stdio: "ignore", timeout: 120_000 });
  expect(existsSync(join(root, "dist", "src", "engine", "wasm-engine.js")), "dist/ missing: run npm run build").toBe(true);
}, 150_000);

describe.each(Object.keys(commands))("WASM engine on %s", (runtime) => {
  it.each(["release", "debug"])("loads the %s build and round-trips a sealed packet", (build) => {
    const [cmd, ...args] = commands[runtime];
    const run = spawnSync(cmd, [...args, build], { cwd: root, encoding: "utf8", timeout: 60_000 });
    expect(run.status, `${runtime} failed: ${run.stderr}`).toBe(0);
    const line = run.stdout.trim().split("\n").pop() ?? "";
    const result = JSON.parse(line);
    expect(result.runtime).toBe(runtime);
    expect(result.build).toBe(build);
    expect(result.seq).toBe(65535);
    // PacketReceived (slot 1, seq 65535, DATA), then the in-order Message on channel 0.
    expect(result.records[0].slice(0, 5)).toEqual([2, 1, 65535, 0, 0]);
    expect(result.records[1].slice(0, 4)).toEqual([5, 1, 0, 0]);
    expect(result.payload).toBe("hello");
  });
});
