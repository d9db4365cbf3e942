// What the game server, the backend and the client agree on.

/** The game's protocol id: a client with another one never reaches the handshake. */
export const PROTOCOL_ID = 0x41474e53; // "AGNS"

/** The GameServer's port (Fleet spec.template.spec.ports[].name) clients reach. */
export const GAME_PORT_NAME = "game";

/** The Agones List (Fleet spec.template.spec.lists) holding the ids of connected players. */
export const PLAYERS_LIST = "players";

/** Reliable-ordered channel 0 (ackwire's default table): the welcome line. */
export const CHAT = 0;

/** Unreliable-sequenced channel 1: a player's inputs, 30 times a second. */
export const INPUT = 1;

/** The 32-byte server key from the environment (a Kubernetes Secret), base64. */
export function serverKeyFromEnv(env = process.env) {
  const text = env.ACKWIRE_SERVER_KEY;
  if (text === undefined || text === "") throw new Error("ACKWIRE_SERVER_KEY is not set: put 32 random bytes, base64, in the ackwire-server-key Secret (see README.md)");
  const key = new Uint8Array(Buffer.from(text, "base64"));
  if (key.length !== 32) throw new Error(`ACKWIRE_SERVER_KEY must be 32 bytes in base64, got ${key.length} bytes`);
  return key;
}

/** A whole number from the environment, or `fallback` when unset. */
export function numberFromEnv(name, fallback, env = process.env) {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got ${JSON.stringify(text)}`);
  return value;
}
