// One host opening connections from fresh source ports while honest hosts connect, on the
// simulator (seeded, virtual time): test/session/host-limits.test.ts and, for the figures,
// bench/sim/one-host.ts. The attacker is one client Endpoint behind a "port multiplexer": its
// connection k goes to a virtual server address 10.0.0.1:k and leaves from 10.66.0.1:k (a node
// per port), so the server sees one host with as many ports as the attacker opens connections.
import { Endpoint } from "../../src/session/endpoint.js";
import type { Address, SansIoNode, Transmit } from "../../src/session/sans-io.js";
import type { EndpointConfig, EndpointEvent } from "../../src/session/types.js";
import { Network } from "../../src/sim/network.js";

const PROTOCOL_ID = 0x6a4d4501;

function endpoint(seed: number, config: Partial<EndpointConfig> = {}): Endpoint {
  return new Endpoint({ protocolId: PROTOCOL_ID, seed, engine: "ts", engineLimits: { batchDatagrams: 64, maxRecords: 4096, sendDatagrams: 64 }, ...config });
}

const SERVER = "10.0.0.1:7777";
const ATTACKER_HOST = "10.66.0.1";
const BASE_PORT = 20_000;

/** The attacker's one Endpoint, shared by its port nodes. */
class PortMux {
  readonly outbox = new Map<number, Uint8Array[]>();
  readonly connected = new Set<number>();
  constructor(readonly endpoint: Endpoint) {}

  /** Sorts the endpoint's datagrams by the virtual server port they go to. */
  drain(now: number): void {
    for (let ev = this.endpoint.pollEvent(); ev !== undefined; ev = this.endpoint.pollEvent()) {
      if (ev.type === "connect") this.connected.add(ev.connection);
      else if (ev.type === "disconnect") this.connected.delete(ev.connection);
    }
    for (let tx = this.endpoint.pollTransmit(now); tx !== undefined; tx = this.endpoint.pollTransmit(now)) {
      const port = Number(tx.to.slice(tx.to.lastIndexOf(":") + 1));
      let queue = this.outbox.get(port);
      if (queue === undefined) this.outbox.set(port, (queue = []));
      queue.push(tx.bytes.slice());
    }
  }
}

/** The attacker's source port `port`: sends its connection's datagrams to the server, hands the replies in. */
class PortNode implements SansIoNode<EndpointEvent> {
  constructor(
    private readonly mux: PortMux,
    private readonly port: number,
    /** The first port node also runs the endpoint's timers. */
    private readonly timers: boolean,
  ) {}
  handleDatagram(now: number, _from: Address, bytes: Uint8Array): void {
    this.mux.endpoint.handleDatagram(now, `10.0.0.1:${this.port}`, bytes);
  }
  handleTimeout(now: number): void {
    if (this.timers) this.mux.endpoint.handleTimeout(now);
  }
  pollTimeout(): number | undefined {
    return this.timers ? this.mux.endpoint.pollTimeout() : undefined;
  }
  pollEvent(): undefined {
    return undefined;
  }
  pollTransmit(now: number): Transmit | undefined {
    this.mux.drain(now);
    const bytes = this.mux.outbox.get(this.port)?.shift();
    return bytes === undefined ? undefined : { to: SERVER, bytes };
  }
}

export interface Run {
  attackerConnected: number;
  honestConnected: number;
  honestTotal: number;
  counters: Endpoint["counters"];
}

/**
 * `attempts` connections from fresh ports of one host, started 10 ms apart, while 10 honest
 * hosts connect one after another through the attack; all within 30 virtual seconds.
 */
export function attack(seed: number, attempts: number, server: Partial<EndpointConfig>): Run {
  const net = new Network<EndpointEvent>({ seed, defaultLink: { latencyMs: 10 } });
  const serverEndpoint = net.addNode(SERVER, endpoint(seed, { server: true, maxConnections: 64, timeoutMs: 60_000, ...server }));
  const mux = new PortMux(endpoint(seed + 1, { maxPendingHandshakes: attempts + 1, timeoutMs: 60_000, engineLimits: { batchDatagrams: 64, maxRecords: 8192, sendDatagrams: 256 } }));
  for (let k = 0; k < attempts; k++) net.addNode(`${ATTACKER_HOST}:${BASE_PORT + k}`, new PortNode(mux, BASE_PORT + k, k === 0));
  const honest: { address: Address; endpoint: Endpoint; up: boolean }[] = [];
  for (let h = 0; h < 10; h++) {
    const address = `10.1.${h}.2:4000`;
    honest.push({ address, endpoint: net.addNode(address, endpoint(seed + 10 + h, { timeoutMs: 60_000 })), up: false });
  }
  let started = 0;
  for (let t = 0; t < 30_000; t += 10) {
    // The attacker keeps opening; each honest host starts 2 s after the previous one.
    if (started < attempts) mux.endpoint.connect(net.now, `10.0.0.1:${BASE_PORT + started++}`);
    if (t % 2000 === 1000 && t / 2000 < honest.length) {
      const h = honest[Math.floor(t / 2000)]!;
      h.endpoint.connect(net.now, SERVER);
    }
    net.drive({ maxTimeMs: 10, maxSteps: 20_000 });
    for (const h of honest) for (const ev of net.takeEvents(h.address)) if (ev.type === "connect") h.up = true;
    net.takeEvents(SERVER);
  }
  mux.drain(net.now);
  return { attackerConnected: mux.connected.size, honestConnected: honest.filter((h) => h.up).length, honestTotal: honest.length, counters: serverEndpoint.counters };
}

