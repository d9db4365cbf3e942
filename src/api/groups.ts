/**
 * Groups (rooms) of a server's connections: a named set with its own broadcast. A connection
 * leaves every group it is in when it disconnects, so a group holds open connections only (and
 * nothing of a connection once it is gone).
 */
import { broadcastTo, type BroadcastOptions, type BroadcastTarget } from "./broadcast.js";
import { Connection } from "./connection.js";
import { ClosedError, InvalidOptionError } from "./errors.js";

export class Group implements Iterable<Connection> {
  readonly name: string;
  readonly #members = new Set<Connection>();
  readonly #registry: GroupRegistry;
  #deleted = false;

  /** @internal use server.group(name). */
  constructor(name: string, registry: GroupRegistry) {
    this.name = name;
    this.#registry = registry;
  }

  /** Members now. */
  get size(): number {
    return this.#members.size;
  }

  has(connection: Connection): boolean {
    return this.#members.has(connection);
  }

  /**
   * Adds an open connection of this server; true if it was not a member yet. False, and not
   * added, for a connection that is closing or closed (it would never leave). Throws
   * InvalidOptionError for a connection of another server, ClosedError on a deleted group.
   */
  add(connection: Connection): boolean {
    if (this.#deleted) throw new ClosedError(`group ${JSON.stringify(this.name)} (deleted)`);
    if (!(connection instanceof Connection)) throw new InvalidOptionError(`group.add(): takes a Connection, got ${connection === null ? "null" : typeof connection}`);
    if (!connection.isOpen) return false;
    this.#registry._check(connection);
    if (this.#members.has(connection)) return false;
    this.#members.add(connection);
    this.#registry._joined(connection, this);
    return true;
  }

  /** Takes a connection out; true if it was a member. */
  remove(connection: Connection): boolean {
    if (!this.#members.delete(connection)) return false;
    this.#registry._left(connection, this);
    return true;
  }

  /**
   * Sends `data` to every member (but `options.except`), copied once for all of them: see
   * server.broadcast(). Returns how many connections it was queued for.
   */
  broadcast(data: Uint8Array, options?: BroadcastOptions): number {
    return broadcastTo(this.#registry.target, this.#members, data, options);
  }

  /** Empties the group and drops it from `server.groups`; server.group(name) then makes a new one. */
  delete(): void {
    if (this.#deleted) return;
    for (const connection of this.#members) this.#registry._left(connection, this);
    this.#members.clear();
    this.#deleted = true;
    this.#registry._deleted(this);
  }

  [Symbol.iterator](): IterableIterator<Connection> {
    return this.#members.values();
  }
}

/** A server's groups, by name, and which groups each connection is in (for leaveAll). */
export class GroupRegistry {
  readonly target: BroadcastTarget;
  readonly #groups = new Map<string, Group>();
  readonly #memberOf = new Map<Connection, Set<Group>>();
  readonly #owns: (connection: Connection) => boolean;

  /** `owns`: whether an open connection is one of this server's. */
  constructor(target: BroadcastTarget, owns: (connection: Connection) => boolean) {
    this.target = target;
    this.#owns = owns;
  }

  get groups(): ReadonlyMap<string, Group> {
    return this.#groups;
  }

  /** The group called `name`, made empty on first use. */
  group(name: string): Group {
    if (typeof name !== "string") throw new InvalidOptionError(`group(): the name is a string, got ${name === null ? "null" : typeof name}`);
    let group = this.#groups.get(name);
    if (group === undefined) this.#groups.set(name, (group = new Group(name, this)));
    return group;
  }

  /** The connection ended: it leaves every group. */
  leaveAll(connection: Connection): void {
    const groups = this.#memberOf.get(connection);
    if (groups === undefined) return;
    this.#memberOf.delete(connection);
    for (const group of groups) group.remove(connection);
  }

  /** Connections that are in at least one group (leak checks). */
  get trackedConnections(): number {
    return this.#memberOf.size;
  }

  /** @internal */
  _check(connection: Connection): void {
    if (!this.#owns(connection)) throw new InvalidOptionError(`group.add(): connection ${connection.id} to ${connection.address} is not a connection of this server: a group holds its own server's connections`);
  }

  /** @internal */
  _joined(connection: Connection, group: Group): void {
    let groups = this.#memberOf.get(connection);
    if (groups === undefined) this.#memberOf.set(connection, (groups = new Set()));
    groups.add(group);
  }

  /** @internal */
  _left(connection: Connection, group: Group): void {
    const groups = this.#memberOf.get(connection);
    if (groups === undefined) return;
    groups.delete(group);
    if (groups.size === 0) this.#memberOf.delete(connection);
  }

  /** @internal */
  _deleted(group: Group): void {
    if (this.#groups.get(group.name) === group) this.#groups.delete(group.name);
  }
}
