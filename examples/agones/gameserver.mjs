// A game server in an Agones fleet: one match per GameServer, players admitted with connect
// tokens from the backend (backend.mjs), the Agones sidecar told about every step.
//
//   start     SDK connect, health pings, learn the public address, listen, Ready
//   allocated the backend allocated this server and hands out tokens for its address
//   players   each connection is a value in the GameServer's "players" List
//   end       no players for EMPTY_SHUTDOWN_MS after allocation: close, Shutdown, exit
//   SIGTERM   (scale-down, node drain, Shutdown done) close, tell clients, exit
//
// Run in a GameServer pod (fleet.yaml). Environment: ACKWIRE_SERVER_KEY (32 bytes, base64),
// GAME_PORT (the containerPort, default 7777), HEALTH_INTERVAL_MS (2000), EMPTY_SHUTDOWN_MS
// (10000), ALLOCATION_WAIT_MS (2000); AGONES_SDK_GRPC_PORT is set by Agones.
import AgonesSDK from "@google-cloud/agones-sdk";
import { listen } from "ackwire";
import { CHAT, GAME_PORT_NAME, INPUT, PLAYERS_LIST, PROTOCOL_ID, numberFromEnv, serverKeyFromEnv } from "./game.mjs";

const serverKey = serverKeyFromEnv();
const gamePort = numberFromEnv("GAME_PORT", 7777);
const healthEveryMs = numberFromEnv("HEALTH_INTERVAL_MS", 2000);
const emptyShutdownMs = numberFromEnv("EMPTY_SHUTDOWN_MS", 10_000);
const allocationWaitMs = numberFromEnv("ALLOCATION_WAIT_MS", 2000);

const sdk = new AgonesSDK();
await sdk.connect(); // the sidecar, on localhost
// Pings from the event loop that also runs ackwire's driver: if a frame of game logic blocks
// the loop, the pings stop too, and Agones marks the GameServer Unhealthy and replaces it.
const health = setInterval(() => sdk.health((error) => console.error(`health ping failed: ${error.message}`)), healthEveryMs);

let gameServer = await sdk.getGameServer();
let stopping = false;
/** Player id (the token's clientId) -> its connection. */
const players = new Map();
/** Per player, inputs received. */
const inputs = new Map();
let emptyTimer;
/** Checks waiting for a GameServer update (until()). */
const watchers = new Set();
sdk.watchGameServer(
  (update) => {
    if (update.status?.state !== gameServer.status?.state) console.log(`state: ${update.status?.state}`);
    gameServer = update;
    for (const check of watchers) check();
    onPlayersOrState();
  },
  (error) => {
    if (!stopping) console.error(`watching the GameServer failed: ${error.message}`);
  },
);

/** Resolves true once `predicate()` holds (checked on each GameServer update), false after `ms`. */
function until(predicate, ms) {
  if (predicate()) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (result) => {
      watchers.delete(check);
      clearTimeout(timer);
      resolve(result);
    };
    const check = () => predicate() && done(true);
    const timer = setTimeout(() => done(false), ms);
    watchers.add(check);
  });
}

const allocated = () => gameServer.status?.state === "Allocated";

/** "ip:port" clients reach this server at: the node's address and the host port Agones mapped to GAME_PORT. */
function publicAddress() {
  const { address, portsList = [] } = gameServer.status ?? {};
  const port = portsList.find((p) => p.name === GAME_PORT_NAME)?.port;
  if (!address || !port) return undefined;
  return address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`;
}

// Agones fills in the address and ports once the pod is scheduled on a node.
if (!(await until(() => publicAddress() !== undefined, 30_000))) {
  console.error(`the GameServer has no address and "${GAME_PORT_NAME}" port after 30 s`);
  process.exit(1);
}
const address = publicAddress();
const capacity = await sdk.beta.getListCapacity(PLAYERS_LIST);

const server = await listen({
  port: gamePort,
  protocolId: PROTOCOL_ID,
  maxConnections: capacity,
  // Tokens must name this server's public address: one minted for another server of the fleet
  // (they all share the key) does not open here.
  secure: { serverKey, addresses: [address] },
  // Players only on an allocated server: a Ready one may be deleted by a scale-down at any
  // time. The backend allocates before it mints a token, so the watch brings "Allocated"
  // within moments of the first handshake, if not before.
  accept: () => until(allocated, allocationWaitMs),
});

const encoder = new TextEncoder();

// One List update at a time, in order: a leave must not overtake its join.
let listUpdates = Promise.resolve();
function updatePlayersList(change, id) {
  const call = change === "add" ? () => sdk.beta.appendListValue(PLAYERS_LIST, id) : () => sdk.beta.deleteListValue(PLAYERS_LIST, id);
  listUpdates = listUpdates.then(call).catch((error) => console.error(`players List ${change} ${id} failed: ${error.message}`));
}

server.on("connection", (conn) => {
  const id = String(conn.identity.clientId);
  const earlier = players.get(id);
  players.set(id, conn);
  inputs.set(id, 0);
  // The same player with a fresh token (its game restarted): the new connection replaces the old.
  if (earlier !== undefined) void earlier.close("kicked");
  else updatePlayersList("add", id);
  conn.on("message", (msg) => {
    if (msg.channel === INPUT) inputs.set(id, (inputs.get(id) ?? 0) + 1);
  });
  conn.send(encoder.encode(`welcome ${id}: ${players.size} of ${capacity} players`), { channel: CHAT });
  console.log(`player ${id} joined from ${conn.address} (${players.size} of ${capacity})`);
  onPlayersOrState();
});

server.on("disconnect", ({ connection, info }) => {
  const id = String(connection.identity.clientId);
  if (players.get(id) !== connection) return; // replaced by a newer connection of the same player
  players.delete(id);
  updatePlayersList("remove", id);
  console.log(`player ${id} left (${typeof info.reason === "string" ? info.reason : "app"}), ${inputs.get(id)} inputs`);
  onPlayersOrState();
});

/** An allocated server without players ends its match after emptyShutdownMs. */
function onPlayersOrState() {
  if (stopping) return;
  if (players.size > 0 || !allocated()) {
    clearTimeout(emptyTimer);
    emptyTimer = undefined;
  } else if (emptyTimer === undefined) {
    emptyTimer = setTimeout(() => void stop("match over: no players"), emptyShutdownMs);
  }
}

async function stop(why) {
  if (stopping) return;
  stopping = true;
  clearTimeout(emptyTimer);
  console.log(`stopping: ${why}`);
  await server.close(); // every client gets "server-shutdown"
  await listUpdates;
  // Agones deletes the pod; on SIGTERM it is being deleted already and this is harmless.
  await sdk.shutdown().catch((error) => console.error(`shutdown failed: ${error.message}`));
  clearInterval(health);
  sdk.close();
  console.log("stopped");
  // Exit outright: the SDK's close() leaves a gRPC connection open that keeps the process alive.
  process.exit(0);
}

process.once("SIGTERM", () => void stop("SIGTERM"));
process.once("SIGINT", () => void stop("SIGINT"));

await sdk.ready();
console.log(`ready: ${gameServer.objectMeta?.name} at ${address} (port ${server.address.port} in the pod), ${capacity} players`);
