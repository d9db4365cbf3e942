/** Typed errors of the relay (./forwarder.ts, ./routes.ts, the API's listenRelay). */
import { AckwireError } from "../api/errors.js";

/** A relay option or route out of range (the message names it and the range). */
export class RelayConfigError extends AckwireError {
  constructor(message: string) {
    super("ERR_RELAY_CONFIG", message);
  }
}
