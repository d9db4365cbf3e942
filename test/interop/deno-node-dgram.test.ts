// Deno on node:dgram (the documented fallback without --unstable-net, and the pinned
// ackwire/node adapter): everything works and close() resolves. Deno's node:dgram never called
// close()'s callback on a socket made with a custom `lookup`, which the Node adapter passed, so
// server.close() hung for ever there (found by a docs review).
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { assertBuilt, FIXTURES, ROOT } from "./helpers.js";

const deno = join(ROOT, "node_modules", ".bin", "deno");

function runFixture(flags: string[], mode: string, net = true): { out: Record<string, unknown> | undefined; text: string } {
  assertBuilt();
  const r = spawnSync(deno, ["run", ...flags, ...(net ? ["--allow-net"] : []), "--allow-read", "--allow-env", join(FIXTURES, "deno-node-dgram.mjs"), mode], { encoding: "utf8", timeout: 30_000 });
  const line = r.stdout.split("\n").find((l) => l.startsWith("{"));
  return { out: line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>), text: `status ${r.status}; stdout ${r.stdout}; stderr ${r.stderr.slice(-1000)}` };
}

describe("Deno on node:dgram", () => {
  it("without --unstable-net (the fallback): connects, echoes, and both ends close", () => {
    const r = runFixture([], "fallback");
    expect(r.out, r.text).toEqual({ echoed: 42, closed: true });
  }, 40_000);

  it("without --allow-net: listen() rejects with a SocketError the caller catches (found by a newcomer review: the process died)", () => {
    const r = runFixture([], "no-net", false);
    expect(r.out, r.text).toEqual({ caught: { name: "SocketError", code: "ERR_SOCKET", mentionsFlag: true } });
  }, 40_000);

  it("through the pinned ackwire/node adapter: the same", () => {
    const r = runFixture(["--unstable-net"], "pinned");
    expect(r.out, r.text).toEqual({ echoed: 42, closed: true });
  }, 40_000);
});
