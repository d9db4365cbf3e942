// The newcomer's path, as written: the quick-start's code blocks (README.md's "Quick start"
// section, or docs/README-quickstart.md until the README has one) are written to a temp app
// that installs the package the way a user would (`npm pack` of this checkout, then
// `npm install <tarball>`, from the npm cache where it can: `npm ci` caches the dependencies'
// tarballs but not their registry metadata, which installing a tarball needs, so a strictly
// offline install failed on a machine whose cache never had it), and run on Node, Bun and Deno with the commands the
// quick-start gives. Two edits, each asserted to apply exactly once: the server binds port 0
// instead of 7777 (tests share the machine) and the client dials the port the server printed.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, ROOT, RUNTIMES, type RuntimeName } from "./helpers.js";

const FIXED_PORT = "7777";

interface QuickStart {
  server: string;
  client: string;
  denoFlags: string[];
}

function readQuickStart(): QuickStart {
  const readme = join(ROOT, "README.md");
  let text = existsSync(readme) ? readFileSync(readme, "utf8") : "";
  const heading = /^##\s+Quick start\s*$/im.exec(text);
  if (heading === null) text = readFileSync(join(ROOT, "docs", "README-quickstart.md"), "utf8");
  else {
    const rest = text.slice(heading.index + heading[0].length);
    const nextHeading = /^##\s/m.exec(rest);
    text = nextHeading === null ? rest : rest.slice(0, nextHeading.index);
  }
  const blocks = [...text.matchAll(/```(?:js|javascript|ts)\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const server = blocks.find((b) => b.includes("listen("));
  const client = blocks.find((b) => b.includes("connect("));
  if (server === undefined || client === undefined) throw new Error("quick start: expected a ```js block calling listen( and one calling connect(");
  const deno = /`deno run ([^`]*?)server\.mjs`/.exec(text);
  if (deno === null) throw new Error("quick start: expected a `deno run ... server.mjs` command");
  return { server, client, denoFlags: deno[1]!.trim().split(/\s+/) };
}

function replaceOnce(source: string, find: string, replacement: string, what: string): string {
  const count = source.split(find).length - 1;
  if (count !== 1) throw new Error(`quick start ${what}: expected "${find}" exactly once, found ${count}`);
  return source.replace(find, replacement);
}

let app = "";
let quick: QuickStart;

beforeAll(() => {
  assertBuilt();
  quick = readQuickStart();
  app = mkdtempSync(join(tmpdir(), "ackwire-quickstart-"));
  execFileSync("npm", ["pack", "--silent", "--pack-destination", app], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
  const tarball = execFileSync("ls", [app], { encoding: "utf8" }).split("\n").find((f) => f.endsWith(".tgz"))!;
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "quickstart-app", private: true, type: "module" }));
  execFileSync("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--silent", `./${tarball}`], { cwd: app, stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
  writeFileSync(join(app, "server.mjs"), replaceOnce(quick.server, `port: ${FIXED_PORT}`, "port: 0", "server"));
}, 120_000);

afterAll(() => {
  if (app !== "") rmSync(app, { recursive: true, force: true });
});

function command(runtime: RuntimeName, script: string): [string, string[]] {
  switch (runtime) {
    case "node":
      return [process.execPath, [script]];
    case "bun":
      return [join(ROOT, "node_modules", ".bin", "bun"), [script]];
    case "deno":
      return [join(ROOT, "node_modules", ".bin", "deno"), ["run", ...quick.denoFlags, script]];
  }
}

/** Runs a script in the app dir; collects stdout; resolves on the first line matching `until`, or on exit. */
function run(runtime: RuntimeName, script: string, limitMs: number) {
  const [cmd, args] = command(runtime, script);
  const child = spawn(cmd, args, { cwd: app, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const kill = setTimeout(() => child.kill("SIGKILL"), limitMs);
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code) => {
      clearTimeout(kill);
      resolve(code);
    }),
  );
  const waitFor = async (pattern: RegExp, ms: number): Promise<RegExpExecArray> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const m = pattern.exec(stdout);
      if (m !== null) return m;
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`${runtime} ${script}: no ${pattern} in ${JSON.stringify(stdout)}; stderr: ${stderr.slice(-1500)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  return { child, exited, waitFor, output: () => ({ stdout, stderr }) };
}

describe.concurrent("the quick start runs as written", () => {
  for (const runtime of RUNTIMES) {
    it(`on ${runtime}: server and client from the quick start, the client prints the echo and exits by itself`, async () => {
      // The runtime check first: a probe that imports the installed package on this runtime.
      const probe = join(app, `probe-${runtime}.mjs`);
      writeFileSync(probe, `import { detectRuntime } from "ackwire";\nconsole.log("runtime:", detectRuntime());\n`);
      const p = run(runtime, probe, 20_000);
      expect((await p.waitFor(/runtime: (\w+)/, 20_000))[1]).toBe(runtime);
      await p.exited;

      const server = run(runtime, "server.mjs", 40_000);
      try {
        const port = (await server.waitFor(/listening on (\d+)/, 20_000))[1]!;
        const clientFile = `client-${runtime}.mjs`;
        writeFileSync(join(app, clientFile), replaceOnce(quick.client, `127.0.0.1:${FIXED_PORT}`, `127.0.0.1:${port}`, "client"));
        const client = run(runtime, clientFile, 20_000);
        await client.waitFor(/echo: hello/, 20_000);
        expect(await client.exited, `client output: ${JSON.stringify(client.output())}`).toBe(0);
        await server.waitFor(/gone: normal/, 5_000);
        // The echo server answers on every default channel, the latest-state one (5, which
        // needs its key back) included: an echo that dropped the key threw out of its listener
        // and the server died (found by a docs review).
        const everyChannel = `every-channel-${runtime}.mjs`;
        writeFileSync(
          join(app, everyChannel),
          [
            `import { connect } from "ackwire";`,
            `const conn = await connect("127.0.0.1:${port}", { protocolId: 0x47414d45 });`,
            `const echoed = new Set();`,
            `const all = new Promise((resolve) => conn.on("message", (m) => { echoed.add(m.channel); if (echoed.size === 8) resolve(); }));`,
            `for (let channel = 0; channel < 8; channel++) conn.send(Uint8Array.of(channel), channel === 5 ? { channel, key: 9 } : { channel });`,
            `await Promise.race([all, new Promise((r) => setTimeout(r, 5000))]);`,
            `console.log("echoed channels:", [...echoed].sort().join(","));`,
            `await conn.close();`,
          ].join("\n"),
        );
        const every = run(runtime, everyChannel, 20_000);
        await every.waitFor(/echoed channels: /, 20_000);
        expect(every.output().stdout).toContain("echoed channels: 0,1,2,3,4,5,6,7");
        expect(server.child.exitCode, `server output: ${JSON.stringify(server.output())}`).toBeNull();
      } finally {
        server.child.kill("SIGKILL");
        await server.exited;
      }
    }, 60_000);
  }
});
