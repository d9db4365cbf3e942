/** The secure layer's client side, loaded by the browser client only with a connect token. */
export { makeRoomForSeal } from "../api/secure-options.js";
export { SecureClientSocket } from "../api/secure-socket.js";
export { parseConnectToken } from "../secure/token.js";
export { wasmAead } from "../secure/wasm-aead.js";
