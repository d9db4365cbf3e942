// The receive-budget attack over real sockets (issue "Memory across connections"): --attackers
// connections, in --processes attacker processes (attackers.ts), each try to make one server
// (server.ts, a real listen() on 127.0.0.1) hold its maximum of received data, while an honest
// client sends 100 B reliable-ordered pings at 30 Hz and times their echoes. Measures what the
// server's connections hold together (its receive-budget counter, peak), its RSS, the honest
// client's echo round trip p50/p99, and how the attackers' connections ended. Where the time went:
// the server's CPU time and datagrams read during the attack (so its cost per datagram), the
// attackers' CPU time, and on Linux the server socket's kernel receive queue and its drops.
//
//   node dist/bench/attack/receive-budget.js                       # 1000 attackers, 256 MiB, 20 s
//   node dist/bench/attack/receive-budget.js --attackers=50 --budget-mib=8 --seconds=4
//   node dist/bench/attack/receive-budget.js --attacker-nice=19 --label=nice   # attackers yield the CPU
//   node dist/bench/attack/receive-budget.js --attacker-cpus=1 --server-cpus=0 --label=pinned
//     # Linux: attackers on CPU 1 (with the kernel work of their sends), server and honest
//     # client on CPU 0, as when the attackers run on machines of their own
//
// Writes bench/results/receive-budget.json unless --no-write (or when imported: runAttack()).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "../../src/index.js";
import { kernelUdpStats } from "./kernel-udp.js";

const here = dirname(fileURLToPath(import.meta.url));
const PROTOCOL_ID = 0x7a11b0d6;

export interface AttackOptions {
  attackers: number;
  processes: number;
  budgetMiB: number;
  seconds: number;
  /** Run the attacker processes at this niceness (Linux, macOS: `nice -n`): the server and the
   *  honest client then get the CPU first, as when the attackers run on machines of their own. */
  attackerNice?: number;
  /** Linux (`taskset -c`): the CPUs the attacker processes run on, and those the server and
   *  this process (the honest client) run on. On loopback a send does the receiving side's
   *  kernel work on the sender's CPU, so pinned attackers keep most of their cost off the
   *  server's CPUs. */
  attackerCpus?: string;
  serverCpus?: string;
}

export interface AttackResult {
  attackers: number;
  budgetBytes: number;
  seconds: number;
  /** Attackers whose handshake completed. */
  attackersConnected: number;
  /** Peak of what all connections held received (the endpoint's counter), and as a share of the budget. */
  peakHeldBytes: number;
  peakHeldOverBudget: number;
  rssBeforeBytes: number;
  peakRssBytes: number;
  budgetCloses: number;
  /** How the attackers' connections ended, as their own endpoints reported it. */
  attackerCloses: Record<string, number>;
  /** Of the connections the bound ended, the share whose peer closed with receive-buffer-exceeded
   *  before the run ended (rather than not yet, by a time-out or no-connection); 0 if none ended. */
  toldWhyShare: number;
  honestSent: number;
  honestEchoed: number;
  honestClosed: boolean;
  honestP50Ms: number;
  honestP99Ms: number;
  honestMaxMs: number;
  /** The honest client's resent packets (its pings, or their acks, lost on the way). */
  honestResends: number;
  /** During the attack (from the attackers' start for --seconds): the server's CPU time per
   *  wall time (1 = one core), the datagrams it read per second, and its CPU time per datagram. */
  serverCpuShare: number;
  serverDatagramsPerSecond: number;
  serverCpuUsPerDatagram: number;
  /** The attacker processes' CPU time per wall time over their lives, all together (cores). */
  attackerCpuShare: number;
  /** Linux only (NaN elsewhere), during the attack: datagrams the kernel dropped at the server's
   *  full socket, as a share of all that arrived there, and the socket's receive queue
   *  (sampled every 250 ms: median and peak, bytes at their buffers' true size). */
  kernelDrops: number;
  kernelDropShare: number;
  kernelQueueP50Bytes: number;
  kernelQueuePeakBytes: number;
}

interface Child {
  proc: ChildProcess;
  lines: Record<string, unknown>[];
  waitFor(key: string, ms: number): Promise<Record<string, unknown>>;
}

function child(script: string, args: string[], nice?: number, cpus?: string): Child {
  let argv = [process.execPath, join(here, script), ...args];
  if (nice !== undefined) argv = ["nice", "-n", String(nice), ...argv];
  if (cpus !== undefined) argv = ["taskset", "-c", cpus, ...argv];
  const stdio: ["pipe", "pipe", "inherit"] = ["pipe", "pipe", "inherit"];
  const proc = spawn(argv[0]!, argv.slice(1), { stdio });
  const lines: Record<string, unknown>[] = [];
  let buffer = "";
  proc.stdout!.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not ours
      }
    }
  });
  const waitFor = async (key: string, ms: number) => {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      const found = lines.find((l) => key in l);
      if (found !== undefined) return found;
      if (proc.exitCode !== null) break;
      await sleep(20);
    }
    throw new Error(`${script}: no "${key}" line within ${ms} ms (exit ${proc.exitCode})`);
  };
  return { proc, lines, waitFor };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export async function runAttack(o: AttackOptions): Promise<AttackResult> {
  const budgetBytes = Math.round(o.budgetMiB * 1024 * 1024);
  const maxMs = (o.seconds + 30) * 1000; // each child stops on its own even if we die
  if (o.serverCpus !== undefined) execFileSync("taskset", ["-pc", o.serverCpus, String(process.pid)], { stdio: "ignore" });
  const server = child("server.js", [`--protocol-id=${PROTOCOL_ID}`, `--budget-bytes=${budgetBytes}`, `--max-connections=${o.attackers + 16}`, `--max-ms=${maxMs}`], undefined, o.serverCpus);
  const children = [server];
  try {
    const ready = await server.waitFor("listening", 20_000);
    const target = `127.0.0.1:${Number(ready.listening)}`;
    const rssBeforeBytes = Number(ready.rss);
    // The honest client first, so its p99 covers the attackers' arrival too.
    const honest = await connect(target, { protocolId: PROTOCOL_ID });
    let honestClosed = false;
    honest.on("disconnect", () => void (honestClosed = true));
    const sentAt = new Map<number, number>();
    const rtts: number[] = [];
    honest.on("message", (m) => {
      if (m.channel !== 0 || m.data.length !== 100) return;
      const i = new DataView(m.data.buffer, m.data.byteOffset).getUint32(0, true);
      const at = sentAt.get(i);
      if (at === undefined) return;
      sentAt.delete(i);
      rtts.push(performance.now() - at);
    });
    const serverPort = Number(ready.listening);
    const kernel: { at: number; rxQueueBytes: number; drops: number }[] = [];
    const sampleKernel = () => {
      const k = kernelUdpStats(serverPort);
      if (k !== undefined) kernel.push({ at: Date.now(), ...k });
    };
    const attackStart = Date.now();
    sampleKernel();
    const kernelTimer = setInterval(sampleKernel, 250);
    const per = Math.ceil(o.attackers / o.processes);
    const attackerProcs: Child[] = [];
    for (let p = 0, left = o.attackers; p < o.processes && left > 0; p++, left -= per) {
      const n = Math.min(per, left);
      const a = child("attackers.js", [`--connections=${n}`, `--target=${target}`, `--protocol-id=${PROTOCOL_ID}`, `--seed=${p + 1}`, `--max-ms=${maxMs}`], o.attackerNice, o.attackerCpus);
      attackerProcs.push(a);
      children.push(a);
    }
    let honestSent = 0;
    const ping = setInterval(() => {
      if (honestClosed) return;
      const b = new Uint8Array(100);
      new DataView(b.buffer).setUint32(0, honestSent, true);
      sentAt.set(honestSent, performance.now());
      honest.send(b, { channel: 0 });
      honestSent++;
    }, 1000 / 30);
    await sleep(o.seconds * 1000);
    const attackEnd = Date.now();
    sampleKernel();
    clearInterval(kernelTimer);
    clearInterval(ping);
    const honestResends = honest.stats().resends;
    // The last echoes; and a connection the bound ended just now is told by its DISCONNECT, or
    // by the one its peer's next packet (a keepalive, at the latest) draws.
    await sleep(2500);
    const honestClosedByServer = honestClosed;
    for (const a of attackerProcs) a.proc.stdin!.end();
    const ends = await Promise.all(attackerProcs.map((a) => a.waitFor("done", 20_000)));
    await honest.close().catch(() => {});
    server.proc.stdin!.end();
    const last = await server.waitFor("done", 20_000);
    const attackerCloses: Record<string, number> = {};
    let attackersConnected = 0;
    for (const e of ends) {
      attackersConnected += Number(e.connected);
      for (const [k, v] of Object.entries(e.reasons as Record<string, number>)) attackerCloses[k] = (attackerCloses[k] ?? 0) + v;
    }
    const samples = server.lines.filter((l) => "held" in l);
    const peakHeldBytes = Math.max(Number(last.peakHeld), ...samples.map((l) => Number(l.held)));
    const peakRssBytes = Math.max(Number(last.peakRss), ...samples.map((l) => Number(l.rss)));
    // The server's samples nearest the attack's start and end.
    const timed = samples.filter((l) => "at" in l && "cpuUs" in l);
    const from = timed.find((l) => Number(l.at) >= attackStart) ?? timed[0];
    const to = [...timed].reverse().find((l) => Number(l.at) <= attackEnd) ?? timed[timed.length - 1];
    const wallMs = from !== undefined && to !== undefined ? Number(to.at) - Number(from.at) : NaN;
    const serverCpuUs = from !== undefined && to !== undefined ? Number(to.cpuUs) - Number(from.cpuUs) : NaN;
    const serverDatagrams = from !== undefined && to !== undefined ? Number(to.datagrams) - Number(from.datagrams) : NaN;
    let attackerCpuUs = 0;
    let attackerLifeMs = 0;
    for (const e of ends) {
      attackerCpuUs += Number(e.cpuUs);
      attackerLifeMs = Math.max(attackerLifeMs, Number(e.lifeMs));
    }
    const inWindow = kernel.filter((k) => k.at >= attackStart && k.at <= attackEnd + 100);
    const kernelDrops = inWindow.length >= 2 ? inWindow[inWindow.length - 1]!.drops - inWindow[0]!.drops : NaN;
    const queues = inWindow.map((k) => k.rxQueueBytes).sort((a, b) => a - b);
    const honestEchoed = rtts.length;
    const sorted = rtts.sort((a, b) => a - b);
    return {
      attackers: o.attackers,
      budgetBytes,
      seconds: o.seconds,
      attackersConnected,
      peakHeldBytes,
      peakHeldOverBudget: peakHeldBytes / budgetBytes,
      rssBeforeBytes,
      peakRssBytes,
      budgetCloses: Number(last.budgetCloses),
      attackerCloses,
      toldWhyShare: Number(last.budgetCloses) > 0 ? Math.min(1, (attackerCloses["receive-buffer-exceeded"] ?? 0) / Number(last.budgetCloses)) : 0,
      honestSent,
      honestEchoed,
      honestClosed: honestClosedByServer,
      honestP50Ms: quantile(sorted, 0.5),
      honestP99Ms: quantile(sorted, 0.99),
      honestMaxMs: sorted[sorted.length - 1] ?? NaN,
      honestResends,
      serverCpuShare: serverCpuUs / 1000 / wallMs,
      serverDatagramsPerSecond: (serverDatagrams * 1000) / wallMs,
      serverCpuUsPerDatagram: serverCpuUs / serverDatagrams,
      attackerCpuShare: attackerCpuUs / 1000 / attackerLifeMs,
      kernelDrops,
      kernelDropShare: kernelDrops / (kernelDrops + serverDatagrams),
      kernelQueueP50Bytes: quantile(queues, 0.5),
      kernelQueuePeakBytes: queues.length > 0 ? queues[queues.length - 1]! : NaN,
    };
  } finally {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill("SIGKILL");
  }
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
  const options: AttackOptions = {
    attackers: Number(args.get("attackers") ?? 1000),
    processes: Number(args.get("processes") ?? 4),
    budgetMiB: Number(args.get("budget-mib") ?? 256),
    seconds: Number(args.get("seconds") ?? 20),
    ...(args.has("attacker-nice") ? { attackerNice: Number(args.get("attacker-nice")) } : {}),
    ...(args.has("attacker-cpus") ? { attackerCpus: args.get("attacker-cpus")! } : {}),
    ...(args.has("server-cpus") ? { serverCpus: args.get("server-cpus")! } : {}),
  };
  const result = await runAttack(options);
  const date = new Date().toISOString().slice(0, 10);
  console.log(JSON.stringify(result, null, 2));
  if (!args.has("no-write")) {
    // One file, one entry per --label (default "full"), so runs of several sizes sit together.
    const file = join(here, "../../../bench/results/receive-budget.json");
    const all = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>) : {};
    const label = args.get("label") ?? "full";
    const command = `node dist/bench/attack/receive-budget.js ${process.argv.slice(2).join(" ")}`.trim();
    all[label] = { date, command, loadAverage: loadavg()[0], ...result };
    writeFileSync(file, `${JSON.stringify(all, null, 2)}\n`);
  }
  process.exit(0);
}
