/**
 * send()'s options checked at the API (root and worker connections alike): a key send() does
 * not know is refused (`{ chanel: 1 }` would otherwise go out on channel 0), and a channel may
 * be named (`{ channel: "chat" }`) by the `name` of its channel config.
 */
import { unknownOptionMessage } from "../util/closest-key.js";
import type { ChannelConfig } from "../session/types.js";
import { ChannelConfigError } from "../channels/errors.js";
import { InvalidOptionError, UnknownChannelNameError } from "./errors.js";

/** Every key of SendCallOptions. */
export const SEND_OPTION_KEYS = ["channel", "key", "receipt", "delayMs", "deadlineMs"] as const;

/**
 * Throws InvalidOptionError for an own or inherited enumerable key of `options` (with a value
 * other than undefined) that send() does not know, naming the closest known one. A for-in over
 * a plain object walks V8's and JavaScriptCore's cached key list: no array is allocated per
 * send, as Object.keys would.
 */
export function checkSendOptionKeys(options: object): void {
  for (const key in options) {
    if (key === "channel" || key === "key" || key === "receipt" || key === "delayMs" || key === "deadlineMs") continue;
    if ((options as Record<string, unknown>)[key] === undefined) continue;
    throw new InvalidOptionError(unknownOptionMessage("send()", key, SEND_OPTION_KEYS, "its options are"));
  }
}

/** Longest channel name (UTF-16 code units): a name is a label in code, not data. */
export const MAX_CHANNEL_NAME_LENGTH = 64;

/**
 * Channel name -> index for a channel list, or undefined when no channel is named. Throws
 * ChannelConfigError for a name that is not a non-empty string of at most 64 characters, or
 * that two channels share.
 */
export function channelNameIndex(channels: readonly ChannelConfig[] | undefined): ReadonlyMap<string, number> | undefined {
  if (channels === undefined || !Array.isArray(channels)) return undefined;
  let names: Map<string, number> | undefined;
  channels.forEach((c: ChannelConfig | null | undefined, i) => {
    const name = c !== null && typeof c === "object" ? c.name : undefined;
    if (name === undefined) return;
    if (typeof name !== "string" || name.length === 0 || name.length > MAX_CHANNEL_NAME_LENGTH) {
      throw new ChannelConfigError(`channel ${i}: name must be a string of 1..${MAX_CHANNEL_NAME_LENGTH} characters (send(bytes, { channel: name }) uses it), got ${typeof name === "string" ? JSON.stringify(name) : String(name)}`);
    }
    names ??= new Map();
    const other = names.get(name);
    if (other !== undefined) throw new ChannelConfigError(`channels ${other} and ${i} are both named ${JSON.stringify(name)}: give each channel its own name`);
    names.set(name, i);
  });
  return names;
}

/** The index `channel` names: a number is returned as it is (the channels check its range). */
export function resolveChannel(channel: number | string, names: ReadonlyMap<string, number> | undefined): number {
  if (typeof channel !== "string") return channel;
  const index = names?.get(channel);
  if (index === undefined) throw new UnknownChannelNameError(channel, names === undefined ? [] : [...names.keys()]);
  return index;
}
