/**
 * The game layer: mechanisms from the seed documents built on top of the public API, not inside
 * the transport. Each module is sans-IO where it can be (time passed in, sends through a
 * callback); attachRpc and the discovery socket helpers are the only parts that own a timer or a
 * socket. See docs/GAME.md.
 */
export * from "./errors.js";
export { ByteWriter, ByteReader, MAX_VARUINT_BYTES } from "./bytes.js";
export { encodeValue, decodeValue, MAX_CODEC_DEPTH, type Value } from "./codec.js";
export { RpcPeer, type RpcOptions, type RpcHandler, type RpcContext, type CallOptions, type RpcCounters } from "./rpc.js";
export { attachRpc, type AttachRpcOptions, type AttachedRpc } from "./rpc-connection.js";
export type { RpcMethods, RpcParams, RpcResult, RpcHandlers, RpcCallArgs, RpcNotifyArgs, RpcMethodName, UntypedRpc } from "./rpc-types.js";
export {
  LockstepPeer,
  LockstepRelay,
  encodeNetTurn,
  decodeNetTurn,
  type LockstepOptions,
  type ExecutedTurn,
  type StallInfo,
  type LockstepEvent,
  type LockstepCounters,
  type NetTurn,
  type RelayCounters,
} from "./lockstep.js";
export { PredictionBuffer, type PredictionOptions, type CorrectionResult } from "./prediction.js";
export {
  DiscoveryResponder,
  DiscoveryAsker,
  encodeQuery,
  encodeAnswer,
  decodeDiscovery,
  QUERY_BYTES,
  DISCOVERY_MAGIC,
  DISCOVERY_VERSION,
  type HostInfo,
  type DiscoveredHost,
  type ResponderOptions,
  type AskerOptions,
} from "./discovery.js";
export { startDiscoveryResponder, discoverHosts, type RunningResponder } from "./discovery-socket.js";
export { LobbyRegistry, LobbyHost, lobbyHandlers, type LobbyHostInfo, type LobbyEntry, type LobbyFilter } from "./lobby.js";
export { ModuleTimer, type Timed } from "./timer.js";
export {
  NatIntroducer,
  natHandlers,
  parseIntroduction,
  PunchRuns,
  MAX_PUNCH_RUNS,
  NatHostUnavailableError,
  NatRateLimitedError,
  INTRODUCE_METHOD,
  type NatIntroduction,
  type NatIntroducerOptions,
  type RelayAllocator,
  type PunchSchedule,
} from "./nat.js";
export { natConnect, answerIntroductions, type NatConnectOptions, type AnsweringIntroductions, type NatSocket, type NatConnection } from "./nat-socket.js";
