// An echo server: every message goes back on the channel it came on.
// Run: node server.mjs [port]
import { listen } from "ackwire";

const port = Number(process.argv[2] ?? 7777);
const server = await listen({ host: "127.0.0.1", port, protocolId: 0x54555431 });
console.log(`listening on 127.0.0.1:${server.address.port}`);

server.on("connection", (conn) => {
  console.log(`connected: ${conn.address}`);
  conn.on("message", (msg) => conn.send(msg.data, { channel: msg.channel, key: msg.key }));
  conn.on("disconnect", (info) => console.log(`disconnected: ${conn.address} (${info.reason})`));
});

// Ctrl-C: tell every client, then exit.
process.once("SIGINT", async () => {
  await server.close();
  console.log("server closed");
});
