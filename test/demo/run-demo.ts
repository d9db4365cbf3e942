// Helpers for test/demo: build the demo if needed, run it as a child process, parse its summary.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const demoMain = join(root, "dist", "demo", "main.js");
export const bin = (name: string): string => join(root, "node_modules", ".bin", name);

/** Compiles demo/ (and what it imports) into dist/ when dist/demo/main.js is missing or older than demo/*.ts. */
export function ensureDemoBuilt(): void {
  const sources = readdirSync(join(root, "demo")).filter((f) => f.endsWith(".ts"));
  const newest = Math.max(...sources.map((f) => statSync(join(root, "demo", f)).mtimeMs));
  if (existsSync(demoMain) && statSync(demoMain).mtimeMs >= newest) return;
  const result = spawnSync(bin("tsc"), ["-p", join(root, "demo", "tsconfig.json")], { cwd: root, encoding: "utf8", timeout: 120_000 });
  if (!existsSync(demoMain)) throw new Error(`could not build the demo: ${result.stdout}${result.stderr}`);
}

export interface DemoRun {
  code: number | null;
  stdout: string;
  stderr: string;
  killed: boolean;
}

/** Runs `command args...` with stdout/stderr piped (so not a TTY); killed after `limitMs`. */
export function runDemo(command: string, args: string[], limitMs: number): Promise<DemoRun> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
    let stdout = "";
    let stderr = "";
    let killed = false;
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      killed = true;
      child.kill("SIGKILL");
    }, limitMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, killed });
    });
  });
}

export interface DemoSummary {
  reliable: { sent: number; arrived: number; inOrder: number; lost: number; outOfOrder: number };
  bulkVerified: boolean;
  stateConverged: number;
  stateKeys: number;
  corrupt: number;
  stale: number;
  clientRows: number;
  result: string;
}

/** Reads the summary's fixed-shape lines; throws naming the line that is missing. */
export function parseSummary(stdout: string): DemoSummary {
  const need = (re: RegExp, what: string): RegExpMatchArray => {
    const m = stdout.match(re);
    if (m === null) throw new Error(`demo output has no ${what} line:\n${stdout}`);
    return m;
  };
  const r = need(/^reliable messages: sent (\d+), arrived (\d+), in order (\d+), lost (\d+), out of order (\d+)$/m, "reliable messages");
  const s = need(/^latest-state: (\d+)\/(\d+) keys converged/m, "latest-state");
  const c = need(/^self-checks: (\d+) corrupt payloads, (\d+) stale/m, "self-checks");
  const result = need(/^RESULT: (\w+)/m, "RESULT")[1]!;
  const table = stdout.slice(stdout.indexOf("=== "));
  return {
    reliable: { sent: +r[1]!, arrived: +r[2]!, inOrder: +r[3]!, lost: +r[4]!, outOfOrder: +r[5]! },
    bulkVerified: /^1 MiB transfer: client 0 -> server, 1048576 bytes, SHA-256 verified/m.test(stdout),
    stateConverged: +s[1]!,
    stateKeys: +s[2]!,
    corrupt: +c[1]!,
    stale: +c[2]!,
    clientRows: (table.match(/^\s+\d+\s+\d+\/\d+\s+\d+\/\d+\s/gm) ?? []).length,
    result,
  };
}
