/** Typed errors of secure connections (src/secure, and the `secure` options of listen/connect). */
import { AckwireError, InvalidOptionError } from "../api/errors.js";

/** A server key, token option or secure option out of range (the message names it). */
export class SecureConfigError extends AckwireError {
  constructor(message: string) {
    super("ERR_SECURE_CONFIG", message);
  }
}

/** Why a connect token cannot be used. */
export type ConnectTokenProblem = "malformed" | "expired" | "protocol-mismatch";

/** connect() was given a token it cannot use: not a token, expired, or for another protocol id. */
export class ConnectTokenError extends AckwireError {
  readonly problem: ConnectTokenProblem;
  constructor(problem: ConnectTokenProblem, message: string) {
    super("ERR_CONNECT_TOKEN", message);
    this.problem = problem;
  }
}

/** What a secure server (the root's or the worker's) refuses: it only accepts clients holding a connect token. */
export function refuseOnSecureServer(secure: boolean, call: string): void {
  if (secure) throw new InvalidOptionError(`${call}: not available on a secure server (listen's secure option): it only accepts clients holding a connect token`);
}
