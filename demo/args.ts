/** Command-line flags of the demo, parsed strictly: an unknown or malformed flag is an error. */

export interface DemoOptions {
  /** Seconds of traffic (the drain and close that follow are bounded separately). */
  durationS: number;
  clients: number;
  /** Independent loss per datagram, each direction, in percent. */
  lossPercent: number;
  /** Round-trip propagation delay in ms: each direction gets half. */
  latencyMs: number;
  /** Uniform extra delay in [0, jitter) ms per datagram, each direction. */
  jitterMs: number;
  /** Seeds the impairment link and every payload (not the endpoints' own randomness). */
  seed: number;
  /** When the proxy rebinds every client's port (a NAT losing its mappings), in seconds of
   *  traffic: -1 = halfway through, 0 = never. */
  rebindAtS: number;
  /** Secure connections (PROTOCOL §9): each client connects with a connect token. */
  secure: boolean;
  /** Also serve a web page that joins as a browser client (WebRTC) and shows its live stats. */
  browser: boolean;
  help: boolean;
}

export const DEFAULT_OPTIONS: DemoOptions = {
  durationS: 20,
  clients: 8,
  lossPercent: 5,
  latencyMs: 80,
  jitterMs: 10,
  seed: 1,
  rebindAtS: -1,
  secure: false,
  browser: false,
  help: false,
};

export class DemoUsageError extends Error {
  readonly code = "ERR_DEMO_USAGE";
  constructor(message: string) {
    super(`${message}\nRun with --help to see every flag.`);
    this.name = "DemoUsageError";
  }
}

export const HELP = `ackwire demo: a server and N clients on 127.0.0.1 through a seeded impairment proxy.

Usage: npm start -- [flags]        (Node)
       npm run demo:bun -- [flags]  /  npm run demo:deno -- [flags]

Flags:
  --duration <s>     seconds of traffic, 1..3600                 (default 20)
  --clients <n>      number of clients, 1..64                    (default 8)
  --loss <percent>   datagram loss each direction, 0..50         (default 5)
  --latency <ms>     round-trip delay (half each way), 0..2000   (default 80)
  --jitter <ms>      extra random delay per datagram, 0..1000    (default 10)
  --seed <n>         seed of the impairments and payloads, u32   (default 1)
  --rebind-at <s>    the proxy gives every client a new port at this many seconds of
                     traffic, as a NAT that lost its mappings; connections must move
                     with their clients; under --duration; 0 = never (default: halfway)
  --secure           secure connections: every datagram encrypted and authenticated, each
                     client holding a connect token minted here as a backend would
  --browser          also serve a web page (its URL is printed) that joins as a browser
                     client over WebRTC, watches the game and shows its live stats
                     (needs the optional werift package; not through the proxy)
  --help             this text

Exit code 0 only if every reliable message arrived exactly once and in order, the 1 MiB
transfer verified by SHA-256, every client's latest-state table converged at the server and
no payload failed its self-check; otherwise 1, with the reasons.`;

interface NumericFlag {
  key: Exclude<keyof DemoOptions, "help" | "secure" | "browser">;
  min: number;
  max: number;
  integer: boolean;
}

const NUMERIC_FLAGS: Record<string, NumericFlag> = {
  "--duration": { key: "durationS", min: 1, max: 3600, integer: false },
  "--clients": { key: "clients", min: 1, max: 64, integer: true },
  "--loss": { key: "lossPercent", min: 0, max: 50, integer: false },
  "--latency": { key: "latencyMs", min: 0, max: 2000, integer: false },
  "--jitter": { key: "jitterMs", min: 0, max: 1000, integer: false },
  "--seed": { key: "seed", min: 0, max: 0xffffffff, integer: true },
  "--rebind-at": { key: "rebindAtS", min: 0, max: 3600, integer: false },
};

/** Accepts `--flag value` and `--flag=value`. Throws DemoUsageError. */
export function parseDemoArgs(argv: readonly string[]): DemoOptions {
  const options: DemoOptions = { ...DEFAULT_OPTIONS };
  const seen = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") {
      options.help = true;
      continue;
    }
    if (arg === "--secure" || arg === "--browser") {
      const key = arg === "--secure" ? "secure" : "browser";
      if (options[key]) throw new DemoUsageError(`${arg} given twice`);
      options[key] = true;
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq >= 0 ? arg.slice(0, eq) : arg;
    const flag = NUMERIC_FLAGS[name];
    if (flag === undefined) {
      throw new DemoUsageError(`unknown flag ${JSON.stringify(arg)}; flags are ${[...Object.keys(NUMERIC_FLAGS), "--secure", "--browser", "--help"].join(", ")}`);
    }
    if (seen.has(name)) throw new DemoUsageError(`${name} given twice`);
    seen.add(name);
    let text: string | undefined;
    if (eq >= 0) text = arg.slice(eq + 1);
    else {
      text = argv[i + 1];
      if (text === undefined || text.startsWith("--")) throw new DemoUsageError(`${name} needs a value, e.g. ${name} ${DEFAULT_OPTIONS[flag.key]}`);
      i++;
    }
    const value = text.trim() === "" ? Number.NaN : Number(text);
    const kind = flag.integer ? "an integer" : "a number";
    if (!Number.isFinite(value) || (flag.integer && !Number.isInteger(value)) || value < flag.min || value > flag.max) {
      throw new DemoUsageError(`${name} must be ${kind} in ${flag.min}..${flag.max}, got ${JSON.stringify(text)}`);
    }
    options[flag.key] = value;
  }
  // Past the run's end it would never happen, and the summary would still say PASS.
  if (options.rebindAtS > 0 && options.rebindAtS >= options.durationS) {
    throw new DemoUsageError(`--rebind-at must be under --duration (${options.durationS} s), or 0 for none; got ${options.rebindAtS}`);
  }
  return options;
}
