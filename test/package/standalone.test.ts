// The built package needs nothing but itself: dist/src and dist/runtimes with package.json, in a
// folder with no node_modules anywhere above it, run on this Node. A plain connection and a
// secure one (createConnectToken, listen's `secure`, connect's `connectToken`) each echo a
// message; any import of a package (before: @noble/ciphers, loaded by every `import "ackwire"`)
// fails with ERR_MODULE_NOT_FOUND.
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
let dir = "";

const SCRIPT = `
import { connect, createConnectToken, generateServerKey, listen } from "./dist/src/index.js";
const protocolId = 0x70616b67;
async function echo(secure) {
  const serverKey = generateServerKey();
  const server = await listen({ port: 0, host: "127.0.0.1", protocolId, ...(secure ? { secure: { serverKey } } : {}) });
  server.on("connection", (conn) => conn.on("message", (msg) => conn.send(msg.data, { channel: msg.channel })));
  const target = "127.0.0.1:" + server.address.port;
  const connectToken = secure ? createConnectToken({ serverKey, protocolId, clientId: 7n, serverAddresses: [target] }) : undefined;
  const conn = await connect(target, { protocolId, connectTimeoutMs: 10000, ...(secure ? { connectToken } : {}) });
  conn.send(new TextEncoder().encode(secure ? "sealed" : "plain"), { channel: 0 });
  let text = "";
  for await (const msg of conn) {
    text = new TextDecoder().decode(msg.data);
    break;
  }
  await conn.close();
  await server.close();
  return text;
}
console.log(JSON.stringify({ plain: await echo(false), secure: await echo(true) }));
`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ackwire-standalone-"));
  for (const part of ["dist/src", "dist/runtimes", "package.json"]) cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  writeFileSync(join(dir, "echo.mjs"), SCRIPT);
});

afterAll(() => {
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
});

it("imports and connects, plain and secure, with no node_modules to load anything from", () => {
  const run = spawnSync(process.execPath, [join(dir, "echo.mjs")], { cwd: dir, encoding: "utf8", timeout: 60_000 });
  expect(run.stderr).not.toMatch(/ERR_MODULE_NOT_FOUND/);
  expect(run.status, run.stdout + run.stderr).toBe(0);
  expect(JSON.parse(run.stdout.trim().split("\n").pop()!)).toEqual({ plain: "plain", secure: "sealed" });
}, 90_000);
