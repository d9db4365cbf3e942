// The peer transports measured, in chart order.

import { enet } from "./enet.js";
import { hazae41Kcp } from "./hazae41-kcp.js";
import { nodeKcp } from "./node-kcp.js";
import type { PeerDriver } from "./peer.js";
import { udxNative } from "./udx-native.js";
import { utpNative } from "./utp-native.js";

export type { PeerDriver } from "./peer.js";

export const PEERS: readonly PeerDriver[] = [udxNative, nodeKcp, utpNative, enet, hazae41Kcp];
