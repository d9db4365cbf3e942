// Application-level flow control of the throughput driver (driver.ts), per traffic class, in
// one place for the scenarios and the paired ratio probes (bench/README.md explains the choice).

/** Raw UDP: 64 datagrams in flight, a cumulative ack every 16 (issue 6's raw ceiling). */
export const RAW_FLOW = { window: 64, ackEvery: 16 } as const;
/** Reliable transports (ackwire reliable, TCP, the peers): 1024 messages in flight, an ack every 64. */
export const RELIABLE_FLOW = { window: 1024, ackEvery: 64 } as const;
