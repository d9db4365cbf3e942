/**
 * A bound on the received bytes all of an endpoint's connections hold together: messages held
 * for ordering and partially reassembled ones, as each ChannelSet charges them to its own
 * maxReceiveBufferBytes. One object shared by the ChannelSets of an Endpoint: each charge moves
 * both. A set evicts its own oldest unreliable partials to stay under it; what reliable data
 * holds the Endpoint frees by ending the connection that holds the most.
 */
export class ReceiveBudget {
  /** Bytes charged by every set together. */
  total = 0;

  constructor(readonly limit: number) {}

  get over(): boolean {
    return this.total > this.limit;
  }
}
