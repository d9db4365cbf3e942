/**
 * A secure server's accept hook sees the client's identity whatever the client did with its
 * addresses in the same receive batch (src/secure/nodes.ts, PROTOCOL §9). The layer opens each
 * datagram as it arrives and the Endpoint handles a whole batch later: a token holder whose
 * RESPONSE from address B is followed, in that batch, by a newer datagram from C has moved its
 * association off B before the Endpoint runs the hook for B. Looked up by address the identity
 * is gone; carried with the datagram it is there. Sans-IO, every datagram moved by hand.
 */
import { describe, expect, it } from "vitest";
import { SecureClientNode, SecureServerNode } from "../../src/secure/nodes.js";
import { createConnectToken, parseConnectToken } from "../../src/secure/token.js";
import { SECURE_OVERHEAD } from "../../src/secure/wire.js";
import type { Address, SansIoNode } from "../../src/session/sans-io.js";
import type { ConnectRequestInfo, EndpointEvent } from "../../src/session/types.js";
import { endpoint } from "../game/helpers.js";

const SERVER = "10.0.0.1:7777";
const A = "10.0.0.2:40000";
const B = "10.0.0.2:40001";
const C = "10.0.0.2:40002";
const PROTOCOL = 0x77;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 3);
const NOW = 1_800_000_000;

function sent(node: SansIoNode<EndpointEvent>, now: number): { to: Address; bytes: Uint8Array }[] {
  const out: { to: Address; bytes: Uint8Array }[] = [];
  for (let tx = node.pollTransmit(now); tx !== undefined; tx = node.pollTransmit(now)) out.push({ to: tx.to, bytes: tx.bytes.slice() });
  return out;
}

function events(node: SansIoNode<EndpointEvent>): EndpointEvent[] {
  const out: EndpointEvent[] = [];
  for (let ev = node.pollEvent(); ev !== undefined; ev = node.pollEvent()) out.push(ev);
  return out;
}

describe("the secure server's identity in the accept hook", () => {
  it("is the datagram's own, when later datagrams of the batch moved the client off its address", () => {
    const seen: { request: ConnectRequestInfo; byAddress: bigint | undefined }[] = [];
    let server!: SecureServerNode<EndpointEvent>;
    const accept = (request: ConnectRequestInfo) => {
      seen.push({ request, byAddress: server.security.identityOf(request.address)?.clientId });
      return request.identity?.clientId === 7n;
    };
    const mtu = { mtu: 1200 - SECURE_OVERHEAD, maxMtu: 1200 - SECURE_OVERHEAD };
    server = new SecureServerNode<EndpointEvent>(endpoint(1, { server: true, protocolId: PROTOCOL, accept, ...mtu }), {
      serverKey: KEY, protocolId: PROTOCOL, addresses: [SERVER], maxAssociations: 8, idleTimeoutMs: 30_000, unixSeconds: () => NOW + 1,
    });
    const clientEndpoint = endpoint(2, { protocolId: PROTOCOL, ...mtu });
    const token = parseConnectToken(createConnectToken({ serverKey: KEY, protocolId: PROTOCOL, clientId: 7, serverAddresses: [SERVER], nowSeconds: NOW }), PROTOCOL, NOW);
    const client = new SecureClientNode<EndpointEvent>(clientEndpoint, SERVER, token);

    // Two HELLOs (the REQUEST and its resend): from A, then from B, where the association
    // follows the newest. The server challenges both; the client hears B's.
    const c = clientEndpoint.connect(0, SERVER);
    const [hello0] = sent(client, 0);
    client.handleTimeout(client.pollTimeout()!);
    const t1 = client.pollTimeout()!;
    const [hello1] = sent(client, t1);
    expect(hello0 && hello1).toBeDefined();
    server.handleDatagram(t1, A, hello0!.bytes);
    server.handleDatagram(t1, B, hello1!.bytes);
    server.handleTimeout(t1);
    events(server);
    const challengeB = sent(server, t1).find((tx) => tx.to === B);
    expect(challengeB).toBeDefined();
    client.handleDatagram(t1, SERVER, challengeB!.bytes);
    client.handleTimeout(t1);
    const [response] = sent(client, t1);
    const t2 = client.pollTimeout()!;
    client.handleTimeout(t2);
    const [resent] = sent(client, t2);
    expect(response && resent).toBeDefined();

    // One batch: the RESPONSE from B (its cookie is B's), then its resend from C, newer, which
    // moves the association to C and lets B go before the Endpoint handles either.
    server.handleDatagram(t2, B, response!.bytes);
    server.handleDatagram(t2, C, resent!.bytes);
    server.handleTimeout(t2);
    const connect = events(server).find((ev) => ev.type === "connect");

    expect(seen.length).toBe(1);
    expect(seen[0]!.request.address).toBe(B);
    expect(seen[0]!.byAddress).toBeUndefined(); // the race: by address, nobody is at B
    expect(seen[0]!.request.identity?.clientId).toBe(7n);
    expect(connect?.type === "connect" && connect.identity?.clientId).toBe(7n);
    // The connection's association holds B again, so its ACCEPT is sealed there and the
    // client connects.
    expect(server.security.identityOf(B)?.clientId).toBe(7n);
    const acceptTx = sent(server, t2).filter((tx) => tx.to === B);
    expect(acceptTx.length).toBeGreaterThan(0);
    expect(server.security.counters.sendDropped).toBe(0);
    for (const tx of acceptTx) client.handleDatagram(t2, SERVER, tx.bytes);
    client.handleTimeout(t2);
    expect(events(client).some((ev) => ev.type === "connect" && ev.connection === c)).toBe(true);
  });
});
