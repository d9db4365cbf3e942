/** Network clock (sans-IO): estimate of the server clock on a client. See docs/CONGESTION.md. */
export { NetworkClock, unwrapU32, type NetworkClockConfig } from "./network-clock.js";
