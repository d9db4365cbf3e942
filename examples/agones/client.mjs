// A player: asks the backend to join, connects to the server it names with the token it
// gives, sends inputs at 30 Hz for a while, then leaves.
// Run: node client.mjs <backend URL> <player id> [seconds, default 5]
import { connect } from "ackwire";
import { CHAT, INPUT, PROTOCOL_ID } from "./game.mjs";

const [backend = "http://127.0.0.1:8080", playerId = "1", secondsText = "5"] = process.argv.slice(2);
const seconds = Number(secondsText);

const res = await fetch(new URL("/join", backend), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ playerId }) });
const answer = await res.json();
if (res.status !== 200) {
  console.error(`backend: ${res.status} ${answer.error}`);
  process.exit(1);
}

// A token connects once: to reconnect, ask the backend again.
const conn = await connect(answer.server, { protocolId: PROTOCOL_ID, connectToken: new Uint8Array(Buffer.from(answer.token, "base64url")) });
const welcome = new Promise((resolve) => conn.on("message", (msg) => msg.channel === CHAT && resolve(new TextDecoder().decode(msg.data))));
console.log(`joined ${answer.server}: ${await welcome}`);

let leaving = false;
const ended = conn.closed.then((info) => leaving || console.log(`server ended the connection (${info.reason})`));
const input = new Uint8Array(8);
for (let tick = 0; tick < seconds * 30 && conn.isOpen; tick++) {
  new DataView(input.buffer).setUint32(0, tick, true);
  conn.send(input, { channel: INPUT });
  await new Promise((resolve) => setTimeout(resolve, 1000 / 30));
}
if (conn.isOpen) {
  leaving = true;
  await conn.close();
  console.log("left");
} else {
  await ended;
}
