/**
 * `npm start -- --browser`: the page that joins the demo as a browser client (ackwire/browser
 * over a WebRTC data channel), watches the 30 Hz snapshots and shows the connection's live
 * stats. Served with the bundle by demo/page-server.ts.
 */
import { SPECTATOR } from "./server.js";

export function browserPage(signalingUrl: string, protocolId: number): string {
  const config = JSON.stringify({ url: signalingUrl, protocolId, spectator: SPECTATOR });
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ackwire demo: browser client</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; background: #10141a; color: #e6e6e6; }
  h1 { font-size: 18px; margin: 0 0 12px; }
  #state { color: #8fd18f; }
  table { border-collapse: collapse; margin: 12px 0; }
  td { padding: 2px 14px 2px 0; font-variant-numeric: tabular-nums; }
  td:first-child { color: #9aa4b2; }
  canvas { background: #1a212b; border-radius: 6px; }
</style></head>
<body>
<h1>ackwire demo: a browser client over WebRTC</h1>
<div>connection: <span id="state">connecting...</span></div>
<table>
  <tr><td>round trip (RTT)</td><td id="rtt">-</td></tr>
  <tr><td>RTT variation</td><td id="rttvar">-</td></tr>
  <tr><td>snapshots received</td><td id="snapshots">0</td></tr>
  <tr><td>players in the last snapshot</td><td id="players">-</td></tr>
  <tr><td>server tick</td><td id="tick">-</td></tr>
  <tr><td>datagram size (path MTU)</td><td id="mtu">-</td></tr>
  <tr><td>packets sent / received</td><td id="packets">-</td></tr>
  <tr><td>packets lost / resends</td><td id="lost">-</td></tr>
  <tr><td>bytes sent / received</td><td id="bytes">-</td></tr>
</table>
<canvas id="field" width="320" height="320"></canvas>
<script type="module">
import { connect } from "/ackwire/ackwire.js";
const config = ${config};
const $ = (id) => document.getElementById(id);
const field = $("field").getContext("2d");
let snapshots = 0;
try {
  const conn = await connect(config.url, { protocolId: config.protocolId, userData: Uint8Array.of(config.spectator), connectTimeoutMs: 15000 });
  $("state").textContent = "open (WebRTC data channel, unordered, no retransmits)";
  conn.on("message", (m) => {
    if (m.channel !== 1 || m.data.length < 12) return;
    const v = new DataView(m.data.buffer, m.data.byteOffset, m.data.byteLength);
    const players = m.data[1];
    snapshots++;
    $("snapshots").textContent = String(snapshots);
    $("players").textContent = String(players);
    $("tick").textContent = String(v.getUint32(4, true));
    field.clearRect(0, 0, 320, 320);
    for (let i = 0; i < players && 20 + 12 * i <= m.data.length; i++) {
      const x = v.getFloat32(12 + 12 * i, true), y = v.getFloat32(16 + 12 * i, true);
      field.fillStyle = "hsl(" + (v.getUint32(8 + 12 * i, true) * 47) % 360 + " 70% 60%)";
      field.beginPath();
      field.arc(160 + x * 1.4, 160 + y * 1.4, 6, 0, 2 * Math.PI);
      field.fill();
    }
  });
  conn.on("disconnect", (info) => ($("state").textContent = "closed: " + JSON.stringify(info.reason)));
  setInterval(() => {
    if (!conn.isOpen) return;
    const s = conn.stats();
    $("rtt").textContent = s.rttMs.toFixed(1) + " ms";
    $("rttvar").textContent = s.rttVarMs.toFixed(1) + " ms";
    $("mtu").textContent = s.pathMtu + " B";
    $("packets").textContent = s.packets.dispatched + " / " + s.packets.received;
    $("lost").textContent = s.packets.dropped + " / " + s.resends;
    $("bytes").textContent = s.bytesSent + " / " + s.bytesReceived;
  }, 250);
} catch (error) {
  $("state").textContent = "failed: " + error.message;
}
</script>
</body></html>
`;
}
