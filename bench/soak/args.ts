/** The soak's flags, parsed strictly: an unknown or malformed flag is an error. */

export interface SoakOptions {
  /** Seconds during which client lives start (the last ones then end gracefully). */
  seconds: number;
  /** Client lives at once (each slot runs one life after another). */
  clients: number;
  lossPercent: number;
  rttMs: number;
  jitterMs: number;
  duplicatePercent: number;
  corruptPercent: number;
  /** A life plays for a uniform random time in [minLifeS, maxLifeS]. */
  minLifeS: number;
  maxLifeS: number;
  /** Percent of lives that vanish (no goodbye; the server must time them out). */
  vanishPercent: number;
  /** The server's and clients' timeoutMs. */
  timeoutMs: number;
  /** Seconds between NAT rebindings (every client gets a new port); 0 = never. */
  rebindS: number;
  /** Seconds between memory samples. */
  sampleS: number;
  secure: boolean;
  seed: number;
  /** Where to write the result JSON (also printed as the SOAK_RESULT line). */
  out: string | undefined;
}

export const DEFAULT_SOAK: SoakOptions = {
  seconds: 600,
  clients: 16,
  lossPercent: 5,
  rttMs: 80,
  jitterMs: 10,
  duplicatePercent: 1,
  corruptPercent: 0.5,
  minLifeS: 5,
  maxLifeS: 60,
  vanishPercent: 30,
  timeoutMs: 5000,
  rebindS: 60,
  sampleS: 10,
  secure: false,
  seed: 1,
  out: undefined,
};

export const SOAK_HELP = `ackwire soak: client lives that come and go, on a bad network, for as long as you like.

Usage: node --expose-gc dist/bench/soak/soak.js [flags]
       bun dist/bench/soak/soak.js [flags]
       deno run -A --unstable-net --v8-flags=--expose-gc dist/bench/soak/soak.js [flags]

Flags (defaults in brackets):
  --seconds <s>        how long new lives keep starting [600]
  --clients <n>        lives at once, 1..64 [16]
  --loss <percent>     datagram loss each way [5]
  --rtt <ms>           round-trip delay [80]
  --jitter <ms>        extra random delay per datagram (reorders) [10]
  --duplicate <pct>    datagrams delivered twice [1]
  --corrupt <pct>      datagrams with 1-3 bits flipped [0.5]
  --min-life <s>       shortest life [5]
  --max-life <s>       longest life [60]
  --vanish <pct>       lives that end without a goodbye [30]
  --timeout-ms <ms>    the endpoints' timeout [5000]
  --rebind <s>         seconds between NAT rebindings, 0 = never [60]
  --sample <s>         seconds between memory samples [10]
  --secure             connect tokens and encrypted datagrams
  --seed <n>           seed of the impairments, lifetimes and payloads [1]
  --out <file>         also write the result JSON there`;

export class SoakUsageError extends Error {
  readonly code = "ERR_SOAK_USAGE";
  constructor(message: string) {
    super(message);
    this.name = "SoakUsageError";
  }
}

type NumberKey = { [K in keyof SoakOptions]: SoakOptions[K] extends number ? K : never }[keyof SoakOptions];

const NUMBER_FLAGS: Record<string, [NumberKey, number, number]> = {
  "--seconds": ["seconds", 1, 86_400],
  "--clients": ["clients", 1, 64],
  "--loss": ["lossPercent", 0, 50],
  "--rtt": ["rttMs", 0, 2000],
  "--jitter": ["jitterMs", 0, 1000],
  "--duplicate": ["duplicatePercent", 0, 50],
  "--corrupt": ["corruptPercent", 0, 50],
  "--min-life": ["minLifeS", 0.5, 86_400],
  "--max-life": ["maxLifeS", 0.5, 86_400],
  "--vanish": ["vanishPercent", 0, 100],
  "--timeout-ms": ["timeoutMs", 1000, 60_000],
  "--rebind": ["rebindS", 0, 86_400],
  "--sample": ["sampleS", 1, 3600],
  "--seed": ["seed", 0, 0xffffffff],
};

export function parseSoakArgs(args: readonly string[]): SoakOptions | "help" {
  const o: SoakOptions = { ...DEFAULT_SOAK };
  const seen = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const flag = args[i]!;
    if (flag === "--help") return "help";
    if (seen.has(flag)) throw new SoakUsageError(`${flag} given twice`);
    seen.add(flag);
    if (flag === "--secure") {
      o.secure = true;
      continue;
    }
    const value = args[++i];
    if (value === undefined) throw new SoakUsageError(`${flag} needs a value`);
    if (flag === "--out") {
      o.out = value;
      continue;
    }
    const spec = NUMBER_FLAGS[flag];
    if (spec === undefined) throw new SoakUsageError(`unknown flag ${flag}`);
    const [key, lo, hi] = spec;
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n) || n < lo || n > hi) throw new SoakUsageError(`${flag} must be a number in ${lo}..${hi}, got "${value}"`);
    if ((key === "clients" || key === "seed") && !Number.isInteger(n)) throw new SoakUsageError(`${flag} must be an integer, got "${value}"`);
    o[key] = n;
  }
  if (o.minLifeS > o.maxLifeS) throw new SoakUsageError(`--min-life (${o.minLifeS}) is above --max-life (${o.maxLifeS})`);
  return o;
}
