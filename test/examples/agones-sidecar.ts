// A stand-in for the Agones sidecar (`agones sdk-server --local` cannot be installed here): a
// gRPC server on 127.0.0.1 serving the SDK's own service definitions, those the npm package
// ships generated from Agones' protos, with @grpc/grpc-js as the SDK itself loads it. It keeps
// one GameServer (state, address, ports, Lists), applies what the SDK asks as the real sidecar
// would, streams every change to WatchGameServer, and records each call in order.
import { createRequire } from "node:module";

// Resolved from the SDK's own folder: the same grpc-js and generated modules the SDK uses.
const sdkRequire = createRequire(createRequire(import.meta.url).resolve("@google-cloud/agones-sdk"));
/* eslint-disable @typescript-eslint/no-explicit-any */
const grpc = sdkRequire("@grpc/grpc-js") as any;
const sdkServices = sdkRequire("../lib/sdk_grpc_pb.js") as any;
const sdkMessages = sdkRequire("../lib/sdk_pb.js") as any;
const betaServices = sdkRequire("../lib/beta/beta_grpc_pb.js") as any;
const betaMessages = sdkRequire("../lib/beta/beta_pb.js") as any;
const jspb = sdkRequire("google-protobuf") as any;

// The generated code writes a map field (GameServer labels, lists) with Map.serializeBinary,
// which google-protobuf 4 no longer has; only a server writes these (the SDK reads them), so
// the stand-in adds it: each entry a delimited message of key (field 1) and value (field 2).
jspb.Map.prototype.serializeBinary ??= function (this: any, field: number, writer: any, writeKey: any, writeValue: any, valueWriter?: unknown) {
  for (const [key, value] of [...this.entries()].sort()) {
    writer.writeMessage(field, [key, value], ([k, v]: [unknown, unknown], w: any) => {
      writeKey.call(w, 1, k);
      if (valueWriter === undefined) writeValue.call(w, 2, v);
      else writeValue.call(w, 2, v, valueWriter);
    });
  }
};

export interface SidecarCall {
  /** The RPC: "Ready", "Health", "AddListValue", ... */
  call: string;
  /** The List value added or removed, the label set, ... */
  value?: string;
  /** The GameServer's state after the call. */
  state: string;
}

export interface SidecarOptions {
  name: string;
  /** The node's address, as GameServer.status.address. */
  address: string;
  /** status.ports: name -> host port. */
  ports: Record<string, number>;
  /** status.lists: name -> capacity (values start empty). */
  lists: Record<string, number>;
  labels?: Record<string, string>;
}

type Callback = (error: { code: number; details: string } | null, response?: unknown) => void;

export class FakeSidecar {
  readonly calls: SidecarCall[] = [];
  state = "Scheduled";
  readonly lists = new Map<string, { capacity: number; values: string[] }>();
  readonly labels: Map<string, string>;
  port = 0;
  readonly #server = new grpc.Server();
  readonly #watchers = new Set<any>();
  /** Resolvers waiting for a call (next()). */
  readonly #waiting: { test: (c: SidecarCall) => boolean; resolve: (c: SidecarCall) => void }[] = [];

  constructor(readonly options: SidecarOptions) {
    for (const [name, capacity] of Object.entries(options.lists)) this.lists.set(name, { capacity, values: [] });
    this.labels = new Map(Object.entries(options.labels ?? {}));
    const ok = (call: string, change?: () => void, value?: string) => (_req: unknown, done: Callback) => {
      change?.();
      this.#record(call, value);
      done(null, new sdkMessages.Empty());
      if (change !== undefined) this.#broadcast();
    };
    this.#server.addService(sdkServices["agones.dev.sdk.SDK"], {
      ready: ok("Ready", () => (this.state = "Ready")),
      allocate: ok("Allocate", () => (this.state = "Allocated")),
      shutdown: ok("Shutdown", () => (this.state = "Shutdown")),
      reserve: ok("Reserve", () => (this.state = "Reserved")),
      health: (stream: any, done: Callback) => {
        stream.on("data", () => this.#record("Health"));
        stream.on("end", () => done(null, new sdkMessages.Empty()));
        stream.on("error", () => undefined);
      },
      getGameServer: (_req: unknown, done: Callback) => {
        this.#record("GetGameServer");
        done(null, this.#gameServer());
      },
      watchGameServer: (stream: any) => {
        this.#record("WatchGameServer");
        this.#watchers.add(stream);
        stream.on("cancelled", () => this.#watchers.delete(stream));
        stream.on("error", () => this.#watchers.delete(stream));
        stream.write(this.#gameServer());
      },
      setLabel: ({ request: req }: any, done: Callback) => {
        this.labels.set(`agones.dev/sdk-${req.getKey()}`, req.getValue());
        this.#record("SetLabel", `${req.getKey()}=${req.getValue()}`);
        done(null, new sdkMessages.Empty());
        this.#broadcast();
      },
    });
    const list = (name: string, done: Callback) => {
      const found = this.lists.get(name);
      if (found === undefined) done({ code: grpc.status.NOT_FOUND, details: `no List ${name}` });
      return found;
    };
    const reply = (name: string, done: Callback) => {
      const { capacity, values } = this.lists.get(name)!;
      const message = new betaMessages.List();
      message.setName(name);
      message.setCapacity(capacity);
      message.setValuesList(values);
      done(null, message);
    };
    this.#server.addService(betaServices["agones.dev.sdk.beta.SDK"], {
      getList: ({ request: req }: any, done: Callback) => {
        this.#record("GetList", req.getName());
        if (list(req.getName(), done)) reply(req.getName(), done);
      },
      addListValue: ({ request: req }: any, done: Callback) => {
        const found = list(req.getName(), done);
        if (found === undefined) return;
        const value = req.getValue() as string;
        if (found.values.includes(value)) return done({ code: grpc.status.ALREADY_EXISTS, details: `${value} is in the List` });
        if (found.values.length >= found.capacity) return done({ code: grpc.status.OUT_OF_RANGE, details: "the List is at capacity" });
        found.values.push(value);
        this.#record("AddListValue", value);
        reply(req.getName(), done);
        this.#broadcast();
      },
      removeListValue: ({ request: req }: any, done: Callback) => {
        const found = list(req.getName(), done);
        if (found === undefined) return;
        const value = req.getValue() as string;
        const at = found.values.indexOf(value);
        if (at < 0) return done({ code: grpc.status.NOT_FOUND, details: `${value} is not in the List` });
        found.values.splice(at, 1);
        this.#record("RemoveListValue", value);
        reply(req.getName(), done);
        this.#broadcast();
      },
    });
  }

  /** Serves on 127.0.0.1 (AGONES_SDK_GRPC_PORT for the game server is `port`). */
  async start(): Promise<void> {
    this.port = await new Promise<number>((resolve, reject) =>
      this.#server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error: Error | null, port: number) => (error ? reject(error) : resolve(port))),
    );
  }

  stop(): void {
    for (const stream of this.#watchers) stream.end();
    this.#server.forceShutdown();
  }

  /** What the Agones controller does on the GameServer's behalf (an allocation, a deletion). */
  setState(state: string): void {
    this.state = state;
    this.#record(`state ${state}`);
    this.#broadcast();
  }

  /** Resolves with the first call at index `from` or later that `test` accepts, waiting at most `ms` for it. */
  waitFor(test: (c: SidecarCall) => boolean, ms: number, from = 0): Promise<SidecarCall> {
    const earlier = this.calls.slice(from).find(test);
    if (earlier !== undefined) return Promise.resolve(earlier);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching sidecar call within ${ms} ms; calls: ${JSON.stringify(this.calls.filter((c) => c.call !== "Health"))}`)), ms);
      this.#waiting.push({ test, resolve: (c) => (clearTimeout(timer), resolve(c)) });
    });
  }

  #record(call: string, value?: string): void {
    const entry: SidecarCall = { call, state: this.state, ...(value !== undefined ? { value } : {}) };
    this.calls.push(entry);
    for (let i = this.#waiting.length - 1; i >= 0; i--) {
      if (this.#waiting[i].test(entry)) this.#waiting.splice(i, 1)[0].resolve(entry);
    }
  }

  #broadcast(): void {
    const message = this.#gameServer();
    for (const stream of this.#watchers) stream.write(message);
  }

  #gameServer(): unknown {
    const GameServer = sdkMessages.GameServer;
    const meta = new GameServer.ObjectMeta();
    meta.setName(this.options.name);
    meta.setNamespace("default");
    for (const [k, v] of this.labels) meta.getLabelsMap().set(k, v);
    const status = new GameServer.Status();
    status.setState(this.state);
    status.setAddress(this.options.address);
    status.setPortsList(Object.entries(this.options.ports).map(([name, port]) => {
      const p = new GameServer.Status.Port();
      p.setName(name);
      p.setPort(port);
      return p;
    }));
    for (const [name, { capacity, values }] of this.lists) {
      const l = new GameServer.Status.ListStatus();
      l.setCapacity(capacity);
      l.setValuesList([...values]);
      status.getListsMap().set(name, l);
    }
    const gs = new GameServer();
    gs.setObjectMeta(meta);
    gs.setStatus(status);
    return gs;
  }
}
