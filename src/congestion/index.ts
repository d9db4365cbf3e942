/** Congestion control and timing estimators (sans-IO). See docs/CONGESTION.md. */
export { RttEstimator, type RttConfig } from "./rtt.js";
export { PingTracker, PingWindow, PING_WINDOW, type PingConfig } from "./ping.js";
export { LossEstimator, type LossConfig } from "./loss.js";
export {
  createController,
  type CongestionController,
  type CongestionConfig,
  type CongestionAlgorithm,
  type SentPacket,
} from "./controller.js";
export { BinaryController, type BinaryConfig, type BinaryMode } from "./binary.js";
export { DefaultController, type DefaultConfig, type DefaultState } from "./default.js";
export { FixedRateController, NoController, type FixedConfig } from "./fixed.js";
export { BandwidthChangeDetector, type BandwidthChange } from "./bandwidth-events.js";
export { WindowedFilter } from "./windowed-filter.js";
export { Pacer } from "./pacer.js";
export { CongestionConfigError } from "./errors.js";
