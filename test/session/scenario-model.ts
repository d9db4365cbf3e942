/**
 * Random scenarios for random-scenarios.test.ts (first written for a property-test hunt that
 * found two timer bugs): a scenario is a channel list, a link each way, and a list of
 * operations (sends, 30 Hz streams, idle gaps, MTU changes, NAT rebindings, closes with and
 * without linger, reconnects). runScenario() plays it on the harness with self-checking
 * payloads and returns every broken promise it finds (docs/CHANNELS.md, docs/SESSION.md).
 */
import fc from "fast-check";
import type { LinkConfig } from "../../src/sim/link.js";
import type { ChannelConfig, EndpointConfig, EndpointEvent } from "../../src/session/types.js";
import { Harness, SERVER, makePayload, parsePayload, type SentMsg, type Side } from "./scenario-harness.js";

/** LatestState keys used by sends and streams (0..KEYS). */
const KEYS = 5;

export type Op =
  | { k: "send"; side: Side; ch: number; size: number; receipt: boolean; delayMs: number; key: number; n: number }
  | { k: "idle"; ms: number }
  | { k: "stream"; side: Side | "both"; ch: number; size: number; ticks: number; per: number; receipt: boolean; tickMs?: number }
  | { k: "mtu"; mtu: number }
  | { k: "rebind" }
  | { k: "close"; side: Side; linger: boolean }
  | { k: "reconnect" };

export interface Scenario {
  seed: number;
  engine: "ts" | "wasm";
  channels: ChannelConfig[];
  common: Partial<EndpointConfig>;
  up: LinkConfig;
  down: LinkConfig;
  ops: Op[];
}

const modes = ["unreliable", "unreliable-sequenced", "reliable-unordered", "reliable-ordered", "reliable-sequenced", "latest-state"] as const;
const RELIABLE = new Set(["reliable-unordered", "reliable-ordered", "reliable-sequenced", "latest-state"]);

export const channelArb: fc.Arbitrary<ChannelConfig> = fc
  .record({
    mode: fc.constantFrom(...modes),
    priority: fc.integer({ min: 0, max: 2 }),
    copies: fc.integer({ min: 0, max: 2 }),
    maxQueueMs: fc.constantFrom(undefined, 50, Infinity),
    maxKeys: fc.constantFrom(undefined, 8),
  })
  .map(({ mode, priority, copies, maxQueueMs, maxKeys }) => {
    const c: ChannelConfig = { mode, priority };
    if (mode === "unreliable" || mode === "unreliable-sequenced") {
      if (copies) c.redundancy = copies;
      if (maxQueueMs !== undefined) c.maxQueueMs = maxQueueMs;
    } else if (copies) c.piggyback = copies;
    if (mode === "latest-state" && maxKeys) c.maxKeys = maxKeys;
    return c;
  });

export const linkArb = (opts: { hard?: boolean } = {}): fc.Arbitrary<LinkConfig> =>
  fc
    .record({
      lossRate: fc.constantFrom(0, 0, 0.01, 0.05, 0.15, opts.hard ? 0.3 : 0.1),
      burst: fc.option(fc.record({ pGoodToBad: fc.constantFrom(0.01, 0.05), pBadToGood: fc.constantFrom(0.2, 0.5) }), { nil: undefined }),
      latencyMs: fc.integer({ min: 0, max: 120 }),
      jitterMs: fc.constantFrom(0, 0, 5, 30),
      reorder: fc.boolean(),
      reorderRate: fc.constantFrom(0, 0, 0.05, 0.2),
      duplicateRate: fc.constantFrom(0, 0, 0.05, 0.2),
      corruptRate: fc.constantFrom(0, 0, 0.01, 0.05),
      bw: fc.option(fc.record({ bandwidthBps: fc.constantFrom(300_000, 1_000_000, 10_000_000), queuePackets: fc.constantFrom(8, 30, 200) }), { nil: undefined }),
      mtu: fc.constantFrom(undefined, undefined, 1200, 1300, 1452, 1500),
    })
    .map((r) => {
      const c: LinkConfig = { lossRate: r.lossRate, latencyMs: r.latencyMs, jitterMs: r.jitterMs, reorder: r.reorder, reorderRate: r.reorderRate, duplicateRate: r.duplicateRate, corruptRate: r.corruptRate };
      if (r.burst) c.burst = r.burst;
      if (r.bw) Object.assign(c, r.bw);
      if (r.mtu) c.mtu = r.mtu;
      return c;
    });

const sizeArb = fc.oneof(
  { weight: 1, arbitrary: fc.constant(0) },
  { weight: 8, arbitrary: fc.integer({ min: 12, max: 300 }) },
  { weight: 3, arbitrary: fc.integer({ min: 1100, max: 6000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 20_000, max: 300_000 }) },
);

export const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 14,
    arbitrary: fc.record({
      k: fc.constant("send" as const),
      side: fc.constantFrom<Side>("client", "server"),
      ch: fc.integer({ min: 0, max: 5 }),
      size: sizeArb,
      receipt: fc.boolean(),
      delayMs: fc.constantFrom(0, 0, 0, 0, 30, 200),
      key: fc.integer({ min: 0, max: KEYS }),
      n: fc.constantFrom(1, 1, 1, 5, 40),
    }),
  },
  { weight: 5, arbitrary: fc.record({ k: fc.constant("idle" as const), ms: fc.constantFrom(1, 10, 33, 100, 500, 3000) }) },
  {
    weight: 8,
    arbitrary: fc.record({
      k: fc.constant("stream" as const),
      side: fc.constantFrom<Side | "both">("client", "server", "both"),
      ch: fc.integer({ min: 0, max: 5 }),
      size: fc.oneof(fc.integer({ min: 12, max: 400 }), fc.integer({ min: 1100, max: 4000 })),
      ticks: fc.integer({ min: 5, max: 300 }),
      per: fc.integer({ min: 1, max: 6 }),
      receipt: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("mtu" as const), mtu: fc.constantFrom(1200, 1250, 1400, 1500) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("rebind" as const) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("close" as const), side: fc.constantFrom<Side>("client", "server"), linger: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("reconnect" as const) }) },
);

export const scenarioArb = (opts: { engine?: "ts" | "wasm"; hard?: boolean; maxOps?: number } = {}): fc.Arbitrary<Scenario> =>
  fc.record({
    seed: fc.integer({ min: 1, max: 1_000_000 }),
    engine: opts.engine ? fc.constant(opts.engine) : fc.constantFrom<"ts" | "wasm">("ts", "wasm"),
    channels: fc.array(channelArb, { minLength: 1, maxLength: 6 }),
    common: fc.record({
      closeTimeoutMs: fc.constant(60_000),
      maxMtu: fc.constantFrom(1200, 1452, 1500),
      timeoutMs: fc.constantFrom(10_000, 20_000),
    }),
    up: linkArb(opts),
    down: linkArb(opts),
    ops: fc.array(opArb, { minLength: 8, maxLength: opts.maxOps ?? 60 }),
  });

interface Epoch {
  n: number;
  c: number; // client connection id
  s: number; // server connection id (-1 until connect)
  clientUp: boolean;
  serverUp: boolean;
  closedBy?: { side: Side; linger: boolean; at: number };
  clientDisc?: EndpointEvent;
  clientDiscAt?: number;
  serverDiscAt?: number;
  serverDisc?: EndpointEvent;
}

export function runScenario(sc: Scenario): { problems: string[]; summary: string } {
  const problems: string[] = [];
  const p = (s: string) => {
    if (problems.length < 30) problems.push(s);
  };
  const h = new Harness(sc.seed, { engine: sc.engine, channels: sc.channels, common: sc.common, toServer: sc.up, toClient: sc.down });
  const sent = new Map<number, SentMsg>();
  const all: SentMsg[] = [];
  const empties: SentMsg[] = [];
  const receipts = new Map<string, { msg: SentMsg; settled: number; delivered?: boolean; at?: number }>();
  let nextId = 1;
  let order = 0;
  const epochs: Epoch[] = [];
  let cur: Epoch | undefined;
  // received per (side-receiver, epoch, channel)
  const recv = new Map<string, { id: number; empty: boolean; key?: number; at: number }[]>();
  const rkey = (rside: Side, epoch: number, ch: number) => `${rside}:${epoch}:${ch}`;
  const epochOfConn = (side: Side, conn: number) => epochs.find((e) => (side === "client" ? e.c : e.s) === conn);

  h.onEvent = (side, ev) => {
    if (ev.type === "connect") {
      if (side === "server" && cur && cur.s < 0) cur.s = ev.connection;
      const e = epochOfConn(side, ev.connection);
      if (e) {
        if (side === "client") e.clientUp = true;
        else e.serverUp = true;
      }
    } else if (ev.type === "disconnect") {
      const e = epochOfConn(side, ev.connection);
      if (e) {
        if (side === "client") {
          e.clientUp = false;
          e.clientDisc = ev;
          e.clientDiscAt = h.now;
        } else {
          e.serverUp = false;
          e.serverDisc = ev;
          e.serverDiscAt = h.now;
        }
      }
    } else if (ev.type === "message") {
      const e = epochOfConn(side, ev.connection);
      if (!e) return p(`${side} message on unknown connection ${ev.connection}`);
      const parsed = parsePayload(ev.data);
      if (parsed === "corrupt") return p(`${side} corrupt message ch ${ev.channel} len ${ev.data.length} at ${h.now}`);
      const list = recv.get(rkey(side, e.n, ev.channel)) ?? [];
      recv.set(rkey(side, e.n, ev.channel), list);
      if (parsed === "empty") {
        list.push({ id: -1, empty: true, key: ev.key, at: h.now });
        return;
      }
      const m = sent.get(parsed.id);
      if (!m) return p(`${side} got unknown id ${parsed.id}`);
      if (m.side === side || m.epoch !== e.n || m.channel !== ev.channel) return p(`${side} misrouted id ${parsed.id} (sent ${m.side} ep ${m.epoch} ch ${m.channel}; got ep ${e.n} ch ${ev.channel})`);
      if (m.key !== undefined && ev.key !== m.key) p(`key mismatch id ${m.id}: ${ev.key} vs ${m.key}`);
      m.delivered++;
      list.push({ id: m.id, empty: false, key: ev.key, at: h.now });
    } else if (ev.type === "receipt") {
      const r = receipts.get(`${side}:${ev.connection}:${ev.receipt}`);
      if (!r) return p(`${side} unknown receipt ${ev.receipt} on ${ev.connection}`);
      r.settled++;
      r.delivered = ev.delivered;
      r.at = h.now;
      if (r.settled > 1) p(`receipt ${ev.receipt} (${side}) reported ${r.settled} times`);
    }
  };

  const connect = () => {
    const c = h.client.connect(h.now, SERVER);
    cur = { n: epochs.length, c, s: -1, clientUp: false, serverUp: false };
    epochs.push(cur);
    h.runUntil(h.now + 6000);
  };
  connect();

  const mode = (ch: number) => sc.channels[ch % sc.channels.length].mode;
  const closeTimeout = sc.common.closeTimeoutMs ?? 3000;

  const doSend = (sideArg: Side, chArg: number, sizeArg: number, receiptArg: boolean, delayArg: number, keyArg: number, n: number) => {
      if (!cur) return;
      const up = sideArg === "client" ? cur.clientUp : cur.serverUp;
      const lingering = cur.closedBy !== undefined;
      if (!up || lingering) return;
      const ch = chArg % sc.channels.length;
      const m0 = mode(ch);
      let size = sizeArg;
      if ((m0 === "unreliable" || m0 === "unreliable-sequenced") && size > 60_000) size = 60_000;
      const count = size > 20_000 ? 1 : n;
      for (let i = 0; i < count; i++) {
        const id = size === 0 ? -1 : nextId++;
        const msg: SentMsg = {
          id, side: sideArg, epoch: cur.n, channel: ch, len: size, receipt: 0, delayMs: delayArg,
          rank: [h.now + delayArg, delayArg > 0 ? 0 : 1, order++], beforeClose: false, delivered: 0,
        };
        if (m0 === "latest-state") msg.key = keyArg;
        const ep = sideArg === "client" ? h.client : h.server;
        const conn = sideArg === "client" ? cur.c : cur.s;
        try {
          msg.receipt = ep.send(conn, makePayload(id, size, sideArg, ch, cur.n), { channel: ch, receipt: receiptArg, key: msg.key, delayMs: delayArg || undefined }, h.now);
        } catch (err) {
          const code = (err as { code?: string }).code;
          if (code === "ERR_TOO_MANY_KEYS" || code === "ERR_MESSAGE_TOO_LARGE") continue;
          throw err;
        }
        if (id > 0) sent.set(id, msg);
        else empties.push(msg);
        all.push(msg);
        if (msg.receipt) receipts.set(`${sideArg}:${conn}:${msg.receipt}`, { msg, settled: 0 });
      }
  };

  for (const op of sc.ops) {
    if (op.k === "send") {
      doSend(op.side, op.ch, op.size, op.receipt, op.delayMs, op.key, op.n);
      h.runUntil(h.now); // flush
    } else if (op.k === "stream") {
      for (let t = 0; t < op.ticks; t++) {
        for (const side of op.side === "both" ? (["client", "server"] as Side[]) : [op.side]) {
          for (let j = 0; j < op.per; j++) doSend(side, op.ch + j, op.size + j, op.receipt && j === 0, 0, (t * 7 + j) % (KEYS + 1), 1);
        }
        h.runUntil(h.now + (op.tickMs ?? 1000 / 30));
      }
    } else if (op.k === "idle") {
      h.runUntil(h.now + op.ms);
    } else if (op.k === "mtu") {
      (h.toServer.config as LinkConfig).mtu = op.mtu;
      (h.toClient.config as LinkConfig).mtu = op.mtu;
    } else if (op.k === "rebind") {
      h.pub = `198.51.100.7:${40001 + epochs.length * 100 + (nextId % 97)}`;
    } else if (op.k === "close") {
      if (!cur || cur.closedBy) continue;
      const up = op.side === "client" ? cur.clientUp : cur.serverUp;
      if (!up) continue;
      cur.closedBy = { side: op.side, linger: op.linger, at: h.now };
      for (const m of all) if (m.epoch === cur.n && m.side === op.side) m.beforeClose = true;
      if (op.side === "client") h.client.close(cur.c, "normal", new Uint8Array(0), h.now, op.linger);
      else h.server.close(cur.s, "normal", new Uint8Array(0), h.now, op.linger);
      h.runUntil(h.now);
    } else if (op.k === "reconnect") {
      if (cur && (cur.clientUp || (cur.closedBy && h.client.connections().includes(cur.c)))) continue;
      if (h.client.connections().length > 0) continue;
      connect();
    }
  }
  // Quiesce: let everything settle.
  let drained = false;
  for (let t = 0; t < 300 && !drained; t++) {
    h.runUntil(h.now + 1000, 2_000_000);
    drained = true;
    for (const ep of [h.client, h.server]) for (const conn of ep.connections()) {
      const st = ep.stats(conn);
      if (st.queuedBytes > 0) drained = false;
    }
  }
  h.runUntil(h.now + 2000, 2_000_000);
  // counters on live connections
  for (const [side, ep] of [["client", h.client], ["server", h.server]] as const) {
    for (const conn of ep.connections()) {
      const st = ep.stats(conn).packets;
      if (st.dispatched !== st.delivered + st.dropped + st.inFlight) p(`${side} counters ${JSON.stringify(st)}`);
    }
  }
  const aliveAtEnd = new Map<number, boolean>();
  for (const e of epochs) aliveAtEnd.set(e.n, drained && e.clientUp && e.serverUp && !e.closedBy);
  // Close everything, then check receipts.
  const survivedAll = (e: Epoch) => aliveAtEnd.get(e.n) === true;
  for (const e of epochs) {
    if (e.clientUp) h.client.close(e.c, "normal", new Uint8Array(0), h.now, true);
  }
  h.runUntil(h.now + closeTimeout + 20_000, 4_000_000);

  // ---- checks ----
  if (h.spins > 0) p(`SPIN: an endpoint's pollTimeout stayed at now for 1000+ steps (${h.spins} times)`);
  for (const e of epochs) {
    const linger = e.closedBy?.linger === true;
    const peerDiscAt = e.closedBy?.side === "client" ? e.serverDiscAt : e.clientDiscAt;
    const peerDisc = e.closedBy?.side === "client" ? e.serverDisc : e.clientDisc;
    const lingerEndedByDelivery = linger && peerDisc?.type === "disconnect" && peerDisc.reason === "normal" && peerDiscAt !== undefined && peerDiscAt < (e.closedBy as { at: number }).at + closeTimeout / 2;
    const completeExpected = (m: SentMsg) => survivedAll(e) || (lingerEndedByDelivery && m.side === e.closedBy?.side && m.beforeClose);
    for (let ch = 0; ch < sc.channels.length; ch++) {
      const md = mode(ch);
      for (const side of ["client", "server"] as Side[]) {
        const rside: Side = side === "client" ? "server" : "client";
        const got = recv.get(rkey(rside, e.n, ch)) ?? [];
        const msgs = all.filter((m) => m.epoch === e.n && m.side === side && m.channel === ch);
        const tag = `ep${e.n} ${side}->${rside} ch${ch} ${md}`;
        const gotIds = got.filter((g) => !g.empty).map((g) => g.id);
        // no duplicates on any mode (latest-state: same id twice is a dup too)
        const seen = new Set<number>();
        for (const id of gotIds) {
          if (seen.has(id)) p(`${tag}: duplicate id ${id}`);
          seen.add(id);
        }
        const nEmpty = got.filter((g) => g.empty).length;
        const sentEmpty = msgs.filter((m) => m.len === 0).length;
        if (md !== "latest-state" && nEmpty > sentEmpty) p(`${tag}: ${nEmpty} empty messages delivered, ${sentEmpty} sent`);
        if (md === "reliable-ordered" || md === "reliable-unordered") {
          for (const m of msgs) if (m.id > 0 && m.delivered === 0 && completeExpected(m)) p(`${tag}: id ${m.id} (len ${m.len}, delay ${m.delayMs}, beforeClose ${m.beforeClose}) never delivered`);
          if (survivedAll(e) && nEmpty !== sentEmpty) p(`${tag}: ${nEmpty} empties delivered of ${sentEmpty}`);
        }
        if (md === "reliable-ordered") {
          // undelayed ones among themselves in send order; all in rank order
          const rankOf = new Map(msgs.map((m) => [m.id, m.rank]));
          let prev: number[] | undefined;
          for (const id of gotIds) {
            const r = rankOf.get(id) as number[];
            if (prev && cmp(r, prev) < 0) p(`${tag}: out of order id ${id} rank ${r} after ${prev}`);
            prev = r;
          }
        }
        if (md === "unreliable-sequenced" || md === "reliable-sequenced") {
          const rankOf = new Map(msgs.map((m) => [m.id, m.rank]));
          let prev: number[] | undefined;
          for (const id of gotIds) {
            const r = rankOf.get(id) as number[];
            if (prev && cmp(r, prev) <= 0) p(`${tag}: older id ${id} rank ${r} after ${prev}`);
            prev = r;
          }
          if (md === "reliable-sequenced" && survivedAll(e)) {
            const newest = [...msgs].sort((a, b) => cmp(a.rank, b.rank)).at(-1);
            if (newest && newest.id > 0 && newest.delivered === 0) p(`${tag}: newest id ${newest.id} never delivered (reliable-sequenced)`);
          }
        }
        if (md === "latest-state") {
          const byKey = new Map<number, { id: number; empty: boolean }[]>();
          for (const g of got) {
            const l = byKey.get(g.key ?? -1) ?? [];
            l.push(g);
            byKey.set(g.key ?? -1, l);
          }
          for (const [key, l] of byKey) {
            let last: number[] | undefined;
            let lastId = -1;
            for (const g of l) {
              if (g.empty) continue;
              const r = (sent.get(g.id) as SentMsg).rank;
              if (last && cmp(r, last) <= 0) p(`${tag}: key ${key} went back ${g.id} (rank ${r}) after ${lastId} (rank ${last})`);
              last = r;
              lastId = g.id;
            }
          }
          if (survivedAll(e)) {
            const keys = new Set(msgs.map((m) => m.key as number));
            for (const key of keys) {
              const newest = msgs.filter((m) => m.key === key).sort((a, b) => cmp(a.rank, b.rank)).at(-1) as SentMsg;
              const l = byKey.get(key) ?? [];
              const lastGot = l.at(-1);
              const want = newest.len === 0 ? "empty" : newest.id;
              const have = lastGot === undefined ? "none" : lastGot.empty ? "empty" : lastGot.id;
              if (want !== have) p(`${tag}: key ${key} converged to ${have}, sender's newest ${want}`);
            }
          }
        }
      }
    }
  }
  for (const [k, r] of receipts) {
    const e = epochs[r.msg.epoch];
    const md = mode(r.msg.channel);
    if (r.settled === 0) p(`receipt ${k} (ch ${r.msg.channel} ${md}, len ${r.msg.len}) never reported`);
    if (r.delivered === true && (md === "reliable-ordered" || md === "reliable-unordered" || (md === "unreliable" && !sc.channels[r.msg.channel].redundancy)) && r.msg.id > 0 && r.msg.delivered === 0) {
      if (md !== "reliable-ordered" || survivedAll(e)) p(`receipt ${k} (ch ${r.msg.channel} ${md}, id ${r.msg.id}) says delivered, message never delivered`);
    }
    if (r.delivered === false && survivedAll(e) && (md === "reliable-ordered" || md === "reliable-unordered") && r.msg.delivered > 0) p(`receipt ${k} (${md}, id ${r.msg.id}) says lost but delivered`);
  }
  const summary = `drained ${drained} alive ${[...aliveAtEnd.values()].join('/')} delivered ${all.filter((m) => m.delivered > 0).length} steps ${h.steps} now ${h.now} sent ${all.length} epochs ${epochs.length} ` + epochs.map((e) => `[${e.n}: cUp ${e.clientUp} sUp ${e.serverUp} closed ${JSON.stringify(e.closedBy)} cd ${JSON.stringify(e.clientDisc?.type === "disconnect" ? e.clientDisc.reason : undefined)} sd ${JSON.stringify(e.serverDisc?.type === "disconnect" ? e.serverDisc.reason : undefined)}]`).join(" ");
  return { problems, summary };
}


function cmp(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}
