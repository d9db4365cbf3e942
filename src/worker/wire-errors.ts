/**
 * Typed errors across the thread boundary. An Error does not survive structured cloning with
 * its class, so it crosses as { name, code, message, props } and is rebuilt on the other side
 * as an instance of the same class (`instanceof ConnectDeniedError` holds on the application's
 * thread), with its extra fields (deny, userData, port, host, reason...) restored.
 */
import * as apiErrors from "../api/errors.js";
import * as channelErrors from "../channels/errors.js";
import * as congestionErrors from "../congestion/errors.js";
import { EngineConfigError, EngineUsageError } from "../engine/layout.js";
import * as relayErrors from "../relay/errors.js";
import * as secureErrors from "../secure/errors.js";
import * as sessionErrors from "../session/errors.js";

export interface WireError {
  name: string;
  code: string;
  message: string;
  /** The error's own extra fields that can be cloned (numbers, strings, booleans, bytes). */
  props: Record<string, unknown>;
}

/** The worker died, could not start, or failed in a way that has no typed error of its own. */
export class WorkerError extends apiErrors.AckwireError {
  constructor(message: string, cause?: unknown) {
    super("ERR_WORKER", message, { cause });
  }
}

const SKIPPED = new Set(["name", "code", "message", "stack", "cause"]);

export function toWireError(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: "Error", code: "ERR_WORKER", message: String(error), props: {} };
  const props: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) {
    if (SKIPPED.has(key)) continue;
    const t = typeof value;
    if (t === "number" || t === "string" || t === "boolean" || value === undefined || value instanceof Uint8Array) props[key] = value;
    else if (t === "object" && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === "number" || typeof v === "string")) props[key] = { ...value }; // e.g. reason { app: n }
  }
  const code = (error as { code?: unknown }).code;
  return { name: error.name, code: typeof code === "string" ? code : "ERR_WORKER", message: error.message, props };
}

type ErrorClass = abstract new (...args: never[]) => Error;

function classesOf(...modules: Record<string, unknown>[]): Map<string, ErrorClass> {
  const map = new Map<string, ErrorClass>();
  for (const module of modules) {
    for (const [name, value] of Object.entries(module)) {
      if (typeof value === "function" && (value === Error || value.prototype instanceof Error)) map.set(name, value as ErrorClass);
    }
  }
  return map;
}

// Every typed error class by name: one class per error across the layers (the session and
// API modules re-export the channel errors they share, src/channels/errors.ts).
let errorClasses: Map<string, ErrorClass> | undefined;

export function fromWireError(wire: WireError): Error {
  errorClasses ??= classesOf(channelErrors, apiErrors, sessionErrors, relayErrors, secureErrors, congestionErrors, { EngineConfigError, EngineUsageError, WorkerError });
  const cls = errorClasses.get(wire.name) ?? apiErrors.AckwireError;
  // Created here (so the stack shows where the application met it), then given the class.
  const error = new Error(wire.message);
  Object.setPrototypeOf(error, cls.prototype);
  Object.assign(error, wire.props, { name: wire.name, code: wire.code });
  return error;
}
