/** Forward error correction: XOR parity over groups of DATA datagrams (PROTOCOL §3, PARITY). */
export * from "./parity-frame.js";
export { ParitySender } from "./parity-sender.js";
export { ParityOutcome, ParityReceiver } from "./parity-receiver.js";
