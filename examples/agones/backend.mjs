// The backend: a player asks to join, the backend allocates a GameServer of the fleet from
// Agones and answers with that server's address and a connect token for it.
//
//   POST /join  {"playerId": "1001"}
//   200         {"server": "203.0.113.7:7321", "token": "<base64url>", "expiresAt": 1767312000}
//   503         {"error": "..."} when the fleet has no server to give
//
// A real backend authenticates the player first (the id here is taken on trust) and sits
// behind HTTPS: the token is what admits a client to a game server.
//
// Environment: ACKWIRE_SERVER_KEY (the game servers' key), FLEET (default "ackwire-game"),
// PORT (HTTP, default 8080), HOST (default "0.0.0.0"), TOKEN_SECONDS (default 30), and for
// the Kubernetes API: in a pod its service account; K8S_API_URL (e.g.
// "http://127.0.0.1:8001" under `kubectl proxy`) and NAMESPACE override.
import { createServer } from "node:http";
import { createConnectToken } from "ackwire";
import { GAME_PORT_NAME, PLAYERS_LIST, PROTOCOL_ID, numberFromEnv, serverKeyFromEnv } from "./game.mjs";
import { allocateGameServer, kubernetesFromEnv } from "./kubernetes.mjs";

const serverKey = serverKeyFromEnv();
const fleet = process.env.FLEET || "ackwire-game";
const tokenSeconds = numberFromEnv("TOKEN_SECONDS", 30);
const kubernetes = kubernetesFromEnv();

/**
 * What Agones is asked for: an allocated server of the fleet with a free player slot first
 * (its match still has room), else a Ready one. Agones packs players onto busy servers this way.
 */
const allocation = {
  apiVersion: "allocation.agones.dev/v1",
  kind: "GameServerAllocation",
  spec: {
    selectors: [
      { matchLabels: { "agones.dev/fleet": fleet }, gameServerState: "Allocated", lists: { [PLAYERS_LIST]: { minAvailableCapacity: 1 } } },
      { matchLabels: { "agones.dev/fleet": fleet }, gameServerState: "Ready" },
    ],
  },
};

async function join(playerId) {
  const { status } = await allocateGameServer(kubernetes, allocation);
  if (status?.state !== "Allocated") return { code: 503, body: { error: `no game server free (allocation ${status?.state ?? "failed"}): try again shortly` } };
  const port = status.ports?.find((p) => p.name === GAME_PORT_NAME)?.port;
  const server = status.address.includes(":") ? `[${status.address}]:${port}` : `${status.address}:${port}`;
  const token = createConnectToken({ serverKey, protocolId: PROTOCOL_ID, clientId: playerId, serverAddresses: [server], expiresInSeconds: tokenSeconds });
  console.log(`player ${playerId} -> ${status.gameServerName} at ${server}`);
  return { code: 200, body: { server, token: Buffer.from(token).toString("base64url"), expiresAt: Math.floor(Date.now() / 1000) + tokenSeconds } };
}

/** The player id from a request body: a u64 in decimal. */
function readPlayerId(text) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  const id = body?.playerId;
  if (typeof id !== "string" || !/^\d{1,20}$/.test(id) || BigInt(id) > 0xffff_ffff_ffff_ffffn) return undefined;
  return BigInt(id);
}

const http = createServer(async (req, res) => {
  const reply = (code, body) => res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify(body));
  if (req.method !== "POST" || req.url !== "/join") return reply(404, { error: "POST /join" });
  let text = "";
  for await (const chunk of req) {
    text += chunk;
    if (text.length > 1024) return reply(413, { error: "body too large" });
  }
  const playerId = readPlayerId(text);
  if (playerId === undefined) return reply(400, { error: 'send {"playerId": "<decimal u64>"}' });
  try {
    const { code, body } = await join(playerId);
    reply(code, body);
  } catch (error) {
    console.error(`allocation for player ${playerId} failed: ${error.message}`);
    reply(502, { error: "allocation failed" });
  }
});

http.listen(numberFromEnv("PORT", 8080), process.env.HOST || "0.0.0.0", () => {
  const { address, port } = http.address();
  console.log(`backend on http://${address}:${port} for fleet ${fleet}`);
});

process.once("SIGTERM", () => http.close());
process.once("SIGINT", () => http.close());
