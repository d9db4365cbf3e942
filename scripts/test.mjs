#!/usr/bin/env node
// `npm test`: build if needed, then vitest three times: every test on the Node that runs npm
// (the machine's default, Node 20 on CI), then the tests that touch a socket, the public API, a
// worker thread or the runtime's own WebAssembly on Node 22 and Node 24, the LTS lines, whose
// binaries come from the npm registry as devDependencies (node22, node24). The simulation
// tests are pure computation on a virtual clock and run once.
//
//   node scripts/test.mjs              all three runs
//   node scripts/test.mjs --only 24    one run (20, 22 or 24), for trying a line alone
//
// Every run goes on when an earlier one failed, so the counts of all of them are printed; the
// exit code is non-zero if any run failed or printed no summary.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const vitest = join(root, "node_modules", "vitest", "vitest.mjs");

/** Test files and folders (vitest filters) that run on every supported Node line. */
export const RUNTIME_TESTS = [
  "test/api/",
  "test/interop/",
  "test/worker/",
  "test/demo/",
  // the built package on its own, plain and secure connections
  "test/package/standalone.test.ts",
  // the game layer over real sockets (the lobby, NAT introductions, RPC over a connection)
  "test/game/nat.test.ts",
  "test/game/rpc.test.ts",
  // the proxy on a UDP socket
  "test/sim/proxy-udp.test.ts",
  // the WebAssembly engine and AEAD as this runtime compiles them (SIMD), and the other runtimes
  "test/engine/index.test.ts",
  "test/engine/runtimes.test.ts",
  "test/secure/aead.test.ts",
  "test/secure/xchacha.test.ts",
];

const lines = [
  // npm_node_execpath: the node that runs npm, even if node_modules/.bin/node shadows it on PATH.
  { line: "20", node: process.env.npm_node_execpath || process.execPath, files: [] },
  { line: "22", node: join(root, "node_modules", "node22", "bin", "node"), files: RUNTIME_TESTS },
  { line: "24", node: join(root, "node_modules", "node24", "bin", "node"), files: RUNTIME_TESTS },
];

const only = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : undefined;
if (only !== undefined && !lines.some((l) => l.line === only)) {
  console.error(`test: --only takes one of ${lines.map((l) => l.line).join(", ")}, got ${only}`);
  process.exit(2);
}

const build = spawnSync(process.execPath, [join(root, "scripts", "build.mjs"), "--if-needed"], { cwd: root, stdio: "inherit" });
if (build.status !== 0) process.exit(build.status ?? 1);

let failed = false;
for (const { line, node, files } of lines) {
  if (only !== undefined && line !== only) continue;
  if (!existsSync(node)) {
    console.error(`test: ${node} is missing: run npm ci (node${line} is a devDependency)`);
    failed = true;
    continue;
  }
  const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
  // The main run takes whatever node runs npm; the others must be the line they are named for.
  if (files.length > 0 && !version.startsWith(`v${line}.`)) {
    console.error(`test: ${node} is ${version}, not Node ${line}`);
    failed = true;
    continue;
  }
  const what = files.length === 0 ? "every test" : "the socket, API and runtime tests";
  console.log(`\ntest: ${what} on node ${version}\n`);
  // ACKWIRE_TEST_NODE_LINE tells a test which run it is in: one whose child processes are all
  // Bun or Deno (the soak's) need not repeat them on every Node line.
  const env = { ...process.env, ACKWIRE_TEST_NODE_LINE: files.length === 0 ? "main" : line };
  const run = spawnSync(node, [vitest, "run", ...files], { cwd: root, stdio: "inherit", env });
  if (run.status !== 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
