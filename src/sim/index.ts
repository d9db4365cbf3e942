/**
 * The simulator's public surface (a candidate for the package's "./testing" subpath export):
 * seeded randomness, impairment links, the virtual network and the proxy's sans-IO core.
 */

export { Rng, RngError, hashString, type Seed } from "./rng.js";
export {
  Link,
  LinkError,
  burstAverageLoss,
  validateLinkConfig,
  type BurstLossConfig,
  type Delivery,
  type LinkConfig,
  type LinkCounters,
  type SendOutcome,
} from "./link.js";
export { SampleRecorder } from "./recorder.js";
export {
  Network,
  NetworkError,
  Pair,
  type DriveOptions,
  type DriveResult,
  type DriveStop,
  type NetworkCounters,
  type NetworkOptions,
  type PairOptions,
  type SpoofedTransmit,
} from "./network.js";
export {
  ProxyCore,
  ProxyError,
  type ProxyCoreOptions,
  type ProxyDirection,
  type ProxyEvent,
  type ProxyStats,
  type ProxyTransmit,
} from "./proxy.js";
export { PROXY_HELP, ProxyUsageError, parseBandwidth, parseHostPort, parseProxyArgs, type HostPort, type ProxyCommand } from "./proxy-options.js";
