/**
 * `npm start`: a server and N clients on 127.0.0.1, every datagram through a seeded impairment
 * proxy (default 5% loss each way, 80 ms RTT, 10 ms jitter), for about 20 seconds of game-like
 * traffic; a live dashboard; a summary; exit 0 only if nothing reliable was lost or reordered.
 *
 * Phases, each bounded: connect (connect timeout) -> traffic (--duration) -> drain (until every
 * reliable message is accounted for, at most DRAIN) -> close (at most CLOSE). A hard deadline
 * over the sum ends the process with exit 1 whatever the network or a peer does.
 */
import { connect, createConnectToken, detectRuntime, generateServerKey, listen, type Connection, type Server } from "../src/index.js";
import { securityDrops } from "../src/secure/server-security.js";
import { DemoUsageError, HELP, parseDemoArgs, type DemoOptions } from "./args.js";
import { BULK_TICK, DemoClient } from "./client.js";
import { Dashboard } from "./dashboard.js";
import { g, now, scriptArgs, sleep, withTimeout } from "./host.js";
import { DemoProxy, runtimeAdapter } from "./proxy.js";
import { DemoServer } from "./server.js";
import { browserPage } from "./browser-page.js";
import type { PageServer } from "./page-server.js";
import { formatSummary } from "./summary.js";
import { failures, reliableSettled, reportClient, totalsOf, type ClientReport } from "./verdict.js";

const PROTOCOL_ID = 0xac1d_de70;
const TICK_HZ = 30;
/** The handshake is two round trips (and a resend or two under loss): 5 s, or more on slow links. */
function connectTimeoutMs(o: DemoOptions): number {
  return 5000 + 4 * (o.latencyMs + o.jitterMs);
}
const CLOSE_BUDGET_MS = 3000;
const REDRAW_MS = 250;

/** How long to wait after the traffic stops for the last reliable messages: resends under loss. */
function drainBudgetMs(o: DemoOptions): number {
  // Generous: the 1 MiB transfer alone took ~10 s at 5% loss and 80 ms RTT when this was written.
  return 30_000 + 20 * (o.latencyMs + o.jitterMs);
}

async function run(o: DemoOptions, dashboardTitle: string): Promise<number> {
  const out = g.process.stdout;
  const runtime = detectRuntime();
  const started = now();
  const dashboard = new Dashboard(out, dashboardTitle, o.durationS <= 10 ? 2000 : 4000);
  const restore = (): void => dashboard.finish();
  g.process.on?.("SIGINT", () => {
    restore();
    g.process.stderr.write("\ninterrupted\n");
    g.process.exit(130);
  });

  let server: Server | undefined;
  let proxy: DemoProxy | undefined;
  let site: PageServer | undefined;
  const clients: DemoClient[] = [];
  try {
    // --secure: this process plays the game's backend too, holding the server key and minting
    // one connect token per client.
    const serverKey = o.secure ? generateServerKey() : undefined;
    // --browser: the page's origin first, so that the signaling endpoint can allow it (CORS).
    let setPage: ((html: string) => void) | undefined;
    if (o.browser) {
      const { servePage } = await import("./page-server.js");
      let html = "";
      site = await servePage(() => html);
      setPage = (text) => (html = text);
    }
    server = await listen({
      protocolId: PROTOCOL_ID, host: "127.0.0.1", port: 0, maxConnections: o.clients + 4,
      ...(serverKey !== undefined ? { secure: { serverKey } } : {}),
      ...(site !== undefined ? { webrtc: { port: 0, allowOrigins: [site.origin] } } : {}),
    });
    if (site !== undefined && setPage !== undefined) {
      setPage(browserPage(server.webrtc!.url, PROTOCOL_ID));
      out.write(`browser client: open ${site.origin}/ to join as a spectator over WebRTC (live stats)\n`);
    }
    const demoServer = new DemoServer(server, o.seed, o.clients, now);
    proxy = await DemoProxy.open({
      adapter: runtimeAdapter(runtime),
      upstream: `127.0.0.1:${server.address.port}`,
      seed: o.seed,
      link: { lossRate: o.lossPercent / 100, latencyMs: o.latencyMs / 2, jitterMs: o.jitterMs },
    });
    if (!dashboard.tty) out.write(`${dashboardTitle}: server on 127.0.0.1:${server.address.port}, impairment proxy on ${proxy.address}\n`);

    // Connect every client through the proxy (the handshake crosses the lossy link too).
    const attempts = await Promise.allSettled(
      Array.from({ length: o.clients }, (_, i) => {
        const connectToken = serverKey === undefined ? undefined : createConnectToken({ serverKey, protocolId: PROTOCOL_ID, clientId: i, serverAddresses: [proxy!.address] });
        return connect(proxy!.address, { protocolId: PROTOCOL_ID, userData: Uint8Array.of(i), connectTimeoutMs: connectTimeoutMs(o), ...(connectToken !== undefined ? { connectToken } : {}) });
      }),
    );
    const connectErrors: string[] = [];
    attempts.forEach((a, i) => {
      if (a.status === "fulfilled") clients.push(new DemoClient(i, a.value, o.seed));
      else connectErrors.push(`client ${i} could not connect: ${(a.reason as Error).message}`);
    });

    // Traffic: one 30 Hz tick drives every client and the server's snapshot; ticks missed by
    // a late timer are caught up (a few at most) so rates stay right.
    const trafficStart = now();
    const totalTicks = Math.round(o.durationS * TICK_HZ);
    let tick = 0;
    const bulkExpected = clients.some((c) => c.index === 0) && totalTicks > BULK_TICK;
    const snapshot = (): ClientReport[] => clients.map((c) => reportClient(c, demoServer));
    // The NAT rebinding: every client gets a new port at rebindAt seconds of traffic.
    const rebindAtS = o.rebindAtS < 0 ? o.durationS / 2 : o.rebindAtS;
    const rebindPlanned = rebindAtS > 0 && rebindAtS < o.durationS;
    let reboundAtS: number | undefined;
    const rebindLine = (): string | undefined => {
      if (!rebindPlanned) return undefined;
      if (reboundAtS === undefined) return `NAT rebinding at ${rebindAtS.toFixed(1)} s`;
      const moved = clients.filter((c) => (demoServer.peers.get(c.index)?.migrations ?? 0) > 0).length;
      return `NAT rebinding at ${reboundAtS.toFixed(1)} s (every client given a new port): ${moved}/${clients.length} connections moved with their clients`;
    };
    const proxyLine = (): string => {
      const p = proxy!.stats();
      const rebind = rebindLine();
      return `dropped to server ${p.toUpstream.lost}/${p.toUpstream.sent}, to clients ${p.toClient.lost}/${p.toClient.sent} datagrams${rebind === undefined ? "" : `; ${rebind}`}`;
    };
    const bulkLine = (): string => {
      const c0 = clients.find((c) => c.index === 0);
      const b = demoServer.peers.get(0)?.bulk;
      if (b !== undefined) return `1 MiB: ${b.verified ? "verified" : "CORRUPT"} at ${(b.arrivedAtMs / 1000).toFixed(1)} s`;
      if (c0?.bulk !== undefined) return "1 MiB: in flight";
      return bulkExpected ? "1 MiB: not started" : "1 MiB: not in this run";
    };
    let phase = "traffic";
    const redraw = (): void => {
      const reports = snapshot();
      dashboard.update({
        t: now(),
        elapsedS: (now() - trafficStart) / 1000,
        durationS: o.durationS,
        phase,
        reports,
        totals: totalsOf(reports, bulkExpected, demoServer.peers.get(0)?.bulk?.verified === true),
        bulk: bulkLine(),
        proxy: proxyLine(),
      });
    };
    const redrawTimer = g.setInterval(redraw, REDRAW_MS);
    await new Promise<void>((resolve) => {
      const timer = g.setInterval(() => {
        const due = Math.min(totalTicks, Math.floor(((now() - trafficStart) * TICK_HZ) / 1000) + 1);
        for (let n = 0; tick < due && n < 4; n++, tick++) {
          for (const c of clients) c.tick(tick);
          demoServer.tick();
        }
        if (rebindPlanned && reboundAtS === undefined && now() - trafficStart >= rebindAtS * 1000) {
          proxy!.rebind();
          reboundAtS = (now() - trafficStart) / 1000;
          if (!dashboard.tty) out.write(`NAT rebinding at ${reboundAtS.toFixed(1)} s: the proxy gives every client a new port\n`);
        }
        if (tick >= totalTicks) {
          g.clearInterval(timer);
          resolve();
        }
      }, 1000 / TICK_HZ);
    });
    const trafficS = (now() - trafficStart) / 1000;

    // Drain: wait until every reliable message sent is accounted for (or the budget runs out).
    phase = "draining";
    const drainStart = now();
    const drainDeadline = drainStart + drainBudgetMs(o);
    while (now() < drainDeadline && !reliableSettled(clients, demoServer, bulkExpected)) await sleep(50);
    await withTimeout(demoServer.settled(), 2000, undefined);
    const drainS = (now() - drainStart) / 1000;
    g.clearInterval(redrawTimer);
    phase = "done";
    redraw();
    dashboard.finish();

    const reports = snapshot();
    const bulk = demoServer.peers.get(0)?.bulk;
    const totals = totalsOf(reports, bulkExpected, bulk?.verified === true);
    const sendErrors = clients.flatMap((c) => (c.sendError === undefined ? [] : [`client ${c.index}: ${c.sendError}`]));
    const reasons = [...connectErrors, ...failures(reports, totals, demoServer, bulkExpected, o.clients, sendErrors, reboundAtS !== undefined)];
    const proxyStats = proxy.stats();
    const secure = server.counters().secure;
    if (secure !== undefined && secure.opened < clients.length) reasons.push(`only ${secure.opened} of ${clients.length} clients opened a secure association`);

    // Close: clients say goodbye, then the server and the proxy; each bounded.
    await withTimeout(Promise.all(clients.map((c) => c.conn.close("normal"))), CLOSE_BUDGET_MS, []);
    await withTimeout(server.close(), CLOSE_BUDGET_MS, undefined);
    await withTimeout(proxy.close(), CLOSE_BUDGET_MS, undefined);
    if (site !== undefined) await withTimeout(site.close(), CLOSE_BUDGET_MS, undefined);

    out.write(
      formatSummary({
        title: dashboardTitle,
        reports,
        totals,
        bulkExpected,
        bulk,
        bulkReceipt: clients.find((c) => c.index === 0)?.bulk?.receipt,
        proxy: proxyStats,
        reasons,
        trafficS,
        drainS,
        rebinding: rebindLine(),
      }),
    );
    if (secure !== undefined) {
      // What the server's secure layer saw: every datagram in authenticated, or dropped and counted.
      const dropped = securityDrops(secure);
      out.write(`secure: ${secure.opened}/${clients.length} clients with a token, ${secure.accepted} datagrams authenticated and decrypted, ${dropped} dropped, ${secure.migrated} moved with their client\n`);
    }
    out.write(`total ${((now() - started) / 1000).toFixed(1)} s on ${runtime}\n`);
    return reasons.length === 0 ? 0 : 1;
  } catch (error) {
    dashboard.finish();
    g.process.stderr.write(`demo failed: ${(error as Error).stack ?? String(error)}\n`);
    return 1;
  }
}

async function main(): Promise<void> {
  let options: DemoOptions;
  try {
    options = parseDemoArgs(scriptArgs());
  } catch (error) {
    if (!(error instanceof DemoUsageError)) throw error;
    g.process.stderr.write(`ackwire demo: ${error.message}\n`);
    return g.process.exit(2);
  }
  if (options.help) {
    g.process.stdout.write(`${HELP}\n`);
    return g.process.exit(0);
  }
  const runtime = detectRuntime();
  const title =
    `ackwire demo on ${runtime}: ${options.clients} clients, loss ${options.lossPercent}%, RTT ${options.latencyMs} ms, ` +
    `jitter ${options.jitterMs} ms, ${options.durationS} s, seed ${options.seed}`;
  // The hard deadline: whatever the network or a peer does, the process ends.
  const hardDeadlineMs = connectTimeoutMs(options) + options.durationS * 1000 + drainBudgetMs(options) + 3 * CLOSE_BUDGET_MS + 5000;
  const deadline = g.setTimeout(() => {
    g.process.stdout.write("\x1b[?25h");
    g.process.stderr.write(`\nRESULT: FAIL - hard deadline of ${(hardDeadlineMs / 1000).toFixed(0)} s passed before the demo finished\n`);
    g.process.exit(1);
  }, hardDeadlineMs);
  const code = await run(options, title);
  g.clearTimeout(deadline);
  g.process.exit(code);
}

void main();
