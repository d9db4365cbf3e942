// docs/TUTORIAL.md runs as written. Every `js` block is a file of examples/tutorial/ shown
// verbatim (a `<!-- file: ... -->` line names it), and every `sh` block is run, in document
// order, as a reader would: in a fresh folder, with the package installed from this checkout
// (`npm install ackwire` is the one command changed, to install this checkout offline instead of
// the registry's copy) and the example files saved there. Servers and proxies stay up in the
// background (as in their own terminals) until the end; each client must finish and report
// every reliable message echoed. Ports the page uses are mapped to free ones on 127.0.0.1.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createSocket } from "node:dgram";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_CHANNELS } from "../../src/index.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const examples = join(root, "examples", "tutorial");
const doc = readFileSync(join(root, "docs", "TUTORIAL.md"), "utf8");

interface Block {
  lang: string;
  body: string;
  /** The `<!-- file: path -->` line right before the block, if any. */
  file?: string;
}

function blocks(markdown: string): Block[] {
  const out: Block[] = [];
  const re = /(?:<!-- file: (\S+) -->\n)?```(\w*)\n([\s\S]*?)```/g;
  for (const m of markdown.matchAll(re)) out.push({ file: m[1], lang: m[2], body: m[3] });
  return out;
}

async function freePorts(n: number): Promise<number[]> {
  const sockets = await Promise.all(
    Array.from({ length: n }, () => new Promise<ReturnType<typeof createSocket>>((ok) => {
      const s = createSocket("udp4");
      s.bind(0, "127.0.0.1", () => ok(s));
    })),
  );
  const ports = sockets.map((s) => s.address().port);
  await Promise.all(sockets.map((s) => new Promise<void>((ok) => s.close(() => ok()))));
  return ports;
}

interface Running {
  command: string;
  child: ChildProcess;
  output: () => string;
  /** The exit code, or the name of the signal that ended it. */
  exited: Promise<number | string>;
}

function start(command: string, cwd: string): Running {
  const child = spawn("/bin/sh", ["-c", `exec ${command}`], {
    cwd,
    env: { ...process.env, npm_config_offline: "true", npm_config_update_notifier: "false" },
    detached: true, // a process group of its own, as a terminal's foreground job
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | string>((ok) => child.on("exit", (code, signal_) => ok(code ?? signal_ ?? "unknown")));
  return { command, child, output: () => output, exited };
}

async function waitFor(run: Running, pattern: RegExp, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pattern.test(run.output())) {
    if (run.child.exitCode !== null) throw new Error(`${run.command} exited (${run.child.exitCode}) before printing ${pattern}:\n${run.output()}`);
    if (Date.now() > deadline) throw new Error(`${run.command}: no ${pattern} within ${ms} ms:\n${run.output()}`);
    await new Promise((ok) => setTimeout(ok, 20));
  }
}

/** Signals the command's process group (npx runs the proxy in a child process of its own). */
function signal(run: Running, name: NodeJS.Signals): void {
  try {
    process.kill(-run.child.pid!, name);
  } catch {
    // already gone
  }
}

/** Ends a background process as Ctrl-C would; a hard kill after `ms` if it does not exit. */
async function interrupt(run: Running, ms: number): Promise<number | string> {
  if (run.child.exitCode !== null) return run.child.exitCode;
  signal(run, "SIGINT");
  const timer = setTimeout(() => signal(run, "SIGKILL"), ms);
  const code = await run.exited;
  clearTimeout(timer);
  return code;
}

/** What a background command prints once it is ready for clients. */
const READY: [RegExp, RegExp][] = [
  [/^node server\.mjs\b/, /listening on/],
  [/^npx ackwire proxy\b/, /ackwire proxy: /],
  [/^node proxy\.mjs\b/, /proxy on /],
];

const scratch = mkdtempSync(join(tmpdir(), "ackwire-tutorial-"));
const background: Running[] = [];
afterAll(async () => {
  for (const run of background.reverse()) await interrupt(run, 3000);
  rmSync(scratch, { recursive: true, force: true });
});

describe("docs/TUTORIAL.md", () => {
  const all = blocks(doc);

  it("shows every example file verbatim, and no other code", () => {
    const js = all.filter((b) => b.lang === "js");
    for (const b of js) {
      expect(b.file, `a js block without a file line:\n${b.body}`).toBeDefined();
      expect(b.body, b.file).toBe(readFileSync(join(root, b.file!), "utf8"));
    }
    const shown = js.map((b) => b.file).sort();
    expect(shown).toEqual(readdirSync(examples).map((name) => `examples/tutorial/${name}`).sort());
    expect(all.every((b) => ["js", "sh", "text"].includes(b.lang)), all.map((b) => b.lang).join(",")).toBe(true);
  });

  it("lists the default channel table as the code has it", () => {
    const rows = [...doc.matchAll(/^\| (\d+) \| `([a-z-]+)` \|/gm)].map((m) => [Number(m[1]), m[2]]);
    expect(rows).toEqual(DEFAULT_CHANNELS.map((c, i) => [i, c.mode]));
  });

  it("runs every command of the page, in order, on 127.0.0.1", async () => {
    const commands = all.filter((b) => b.lang === "sh").flatMap((b) => b.body.split("\n").filter((line) => line.trim() !== ""));
    // Each port the page names gets a free one of its own.
    const named = [...new Set(commands.flatMap((c) => [...c.matchAll(/(?<=127\.0\.0\.1:|\.mjs )\d{4,5}\b/g)].map((m) => m[0])))];
    const free = await freePorts(named.length);
    const port = new Map(named.map((p, i) => [p, String(free[i])]));
    let cwd = scratch;
    let saved = false;
    const clients: string[] = [];
    for (const line of commands) {
      const command = line.replace(/(?<=127\.0\.0\.1:|\.mjs )\d{4,5}\b/g, (p) => port.get(p)!);
      const mkdir = /^mkdir (\S+) && cd \1$/.exec(command);
      if (mkdir) {
        cwd = join(cwd, mkdir[1]);
        mkdirSync(cwd);
        continue;
      }
      if (command.startsWith("npm ")) {
        const actual = command === "npm install ackwire" ? `npm install --offline --no-audit --no-fund ${root}` : command;
        const result = spawnSync("/bin/sh", ["-c", actual], { cwd, encoding: "utf8", timeout: 60_000 });
        expect(result.status, `${command}\n${result.stdout}\n${result.stderr}`).toBe(0);
        continue;
      }
      if (!saved) {
        // The reader saved the page's files in the folder before running them.
        for (const name of readdirSync(examples)) copyFileSync(join(examples, name), join(cwd, name));
        saved = true;
      }
      const ready = READY.find(([command_]) => command_.test(command));
      if (ready) {
        const run = start(command, cwd);
        background.push(run);
        await waitFor(run, ready[1], 30_000);
        continue;
      }
      expect(command, "a command this test does not know how to run").toMatch(/^node client\.mjs /);
      const run = start(command, cwd);
      const timer = setTimeout(() => signal(run, "SIGKILL"), 30_000);
      const code = await run.exited;
      clearTimeout(timer);
      expect(code, `${command}:\n${run.output()}`).toBe(0);
      expect(run.output()).toContain('"bye" delivered: true');
      expect(run.output()).toContain("chat echoes: 21 of 21");
      expect(run.output()).toMatch(/position echoes: \d+ of 30/);
      clients.push(run.output());
    }
    expect(clients.length).toBeGreaterThanOrEqual(3); // direct, through the CLI proxy, through proxy.mjs
    // Ctrl-C in each terminal: the server says goodbye to its clients, the proxies print their counters.
    for (const run of background.splice(0).reverse()) {
      // Our scripts exit 0 after their SIGINT handler; npx re-raises the signal it passed on.
      const ended = await interrupt(run, 5000);
      expect(ended, `${run.command}:\n${run.output()}`).toBe(run.command.startsWith("npx ") && ended === "SIGINT" ? "SIGINT" : 0);
      if (/server\.mjs/.test(run.command)) expect(run.output()).toContain("server closed");
      else expect(run.output()).toMatch(/to server +sent [1-9]/);
    }
  }, 180_000);
});
