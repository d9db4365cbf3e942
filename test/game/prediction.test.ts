/**
 * Client-side prediction with a toy deterministic physics step on a virtual tick clock: the
 * server applies the same inputs plus "wind" the client cannot predict; its corrections come
 * back late (and some are lost). The client must end on the server's state, replaying a bounded
 * number of steps per correction.
 */
import { describe, expect, it } from "vitest";
import { PredictionBuffer } from "../../src/game/prediction.js";
import { Rng } from "../../src/sim/rng.js";

interface Body {
  x: number;
  v: number;
}
type Input = -1 | 0 | 1;

/** Integer physics: thrust changes velocity, friction pulls it to 0, position integrates. */
const step = (s: Body, input: Input): Body => {
  const v = s.v + input * 2 - Math.sign(s.v);
  return { x: s.x + v, v };
};
const same = (a: Body, b: Body) => a.x === b.x && a.v === b.v;

function run(seed: number, options: { upTicks: number; downTicks: number; lossRate: number; windRate: number; capacity: number }) {
  const rng = new Rng(seed);
  const client = new PredictionBuffer<Input, Body>({ step, equals: same, capacity: options.capacity, tick: 0, state: { x: 0, v: 0 } });
  const server: Body[] = [{ x: 0, v: 0 }];
  const inputs: Input[] = [0];
  // Corrections in flight: [arrival tick, tick, state].
  const inFlight: [number, number, Body][] = [];
  const replays: number[] = [];
  const lastInputTick = 400;
  for (let now = 1; now <= lastInputTick + options.upTicks + options.downTicks + 2; now++) {
    if (now <= lastInputTick) {
      const input = ((rng.int(3) - 1) as Input);
      inputs[now] = input;
      client.predict(input);
    }
    // The server simulates tick n when the input for it has arrived (upTicks later).
    const n = now - options.upTicks;
    if (n >= 1 && n <= lastInputTick) {
      let s = step(server[n - 1]!, inputs[n]!);
      if (n < 300 && rng.chance(options.windRate)) s = { x: s.x + 5, v: s.v + 1 }; // unpredictable
      server[n] = s;
      if (n === lastInputTick || !rng.chance(options.lossRate)) inFlight.push([now + options.downTicks, n, s]);
    }
    for (const c of inFlight.filter(([at]) => at === now)) replays.push(client.correct(c[1], c[2]).replayed);
  }
  return { client, server, replays, lastInputTick };
}

describe("PredictionBuffer", () => {
  for (const [seed, lossRate] of [
    [41, 0],
    [42, 0.1],
    [43, 0.3],
  ] as const) {
    it(`converges to the server's state after late corrections, ${lossRate * 100}% lost (seed ${seed})`, () => {
      const { client, server, replays, lastInputTick } = run(seed, { upTicks: 4, downTicks: 6, lossRate, windRate: 0.05, capacity: 64 });
      const why = `seed ${seed}`;
      expect(client.tick, why).toBe(lastInputTick);
      expect(client.state, why).toEqual(server[lastInputTick]);
      // Every buffered state from the last correction on matches the server's.
      for (let t = client.oldestTick; t <= client.tick; t++) expect(client.stateAt(t), `${why} tick ${t}`).toEqual(server[t]);
      // There was something to correct, and each replay stayed within the round trip.
      expect(client.counters.mispredictions, why).toBeGreaterThan(0);
      expect(Math.max(...replays), why).toBeLessThanOrEqual(4 + 6);
      expect(client.counters.maxReplay).toBeLessThan(client.capacity);
    });
  }

  it("replays nothing when the prediction was right", () => {
    const { client, replays } = run(44, { upTicks: 3, downTicks: 3, lossRate: 0, windRate: 0, capacity: 32 });
    expect(client.counters.corrections).toBeGreaterThan(300);
    expect(client.counters.mispredictions).toBe(0);
    expect(replays.every((r) => r === 0)).toBe(true);
  });

  it("keeps a fixed window and throws typed errors outside it", () => {
    const p = new PredictionBuffer<Input, Body>({ step, capacity: 8, tick: 100, state: { x: 0, v: 0 } });
    for (let i = 0; i < 20; i++) p.predict(1);
    expect(p.tick).toBe(120);
    expect(p.oldestTick).toBe(113);
    expect(p.inputAt(112)).toBeUndefined();
    expect(p.stateAt(113)).toBeDefined();
    expect(() => p.correct(112, { x: 0, v: 0 })).toThrow(expect.objectContaining({ code: "ERR_TICK_OUT_OF_BUFFER", tick: 112 }));
    expect(() => p.correct(121, { x: 0, v: 0 })).toThrow(expect.objectContaining({ code: "ERR_TICK_OUT_OF_BUFFER", newest: 120 }));
    expect(p.correct(113, { x: 1000, v: 0 }).replayed).toBe(7);
    // Ticks before a correction are gone: the server has moved past them.
    expect(() => p.correct(112, { x: 0, v: 0 })).toThrow(expect.objectContaining({ code: "ERR_TICK_OUT_OF_BUFFER" }));
    p.reset(500, { x: 7, v: 0 });
    expect(p.state).toEqual({ x: 7, v: 0 });
    expect(() => new PredictionBuffer({ step, capacity: 1, tick: 0, state: 0 })).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
  });

  it("GAME.md's server-state handler: a stale update is ignored, one the buffer cannot replay snaps to the server", () => {
    const p = new PredictionBuffer<Input, Body>({ step, equals: same, capacity: 8, tick: 100, state: { x: 0, v: 0 } });
    // As in GAME.md.
    let lastServerTick = -1;
    const onServerState = (tick: number, state: Body) => {
      if (tick <= lastServerTick) return;
      lastServerTick = tick;
      try {
        p.correct(tick, state);
      } catch (e) {
        if ((e as { code?: string }).code === "ERR_TICK_OUT_OF_BUFFER") p.reset(tick, state);
        else throw e;
      }
    };
    for (let i = 0; i < 20; i++) p.predict(1);
    onServerState(115, p.stateAt(115)!);
    const shown = p.state;
    // An older update overtaken on an unreliable channel: out of the buffer (115 was applied),
    // and resetting to it would rewind the client 7 ticks.
    expect(() => p.correct(113, { x: -50, v: 0 })).toThrow(expect.objectContaining({ code: "ERR_TICK_OUT_OF_BUFFER", tick: 113, oldest: 115 }));
    onServerState(113, { x: -50, v: 0 });
    expect(p.tick).toBe(120);
    expect(p.state).toEqual(shown);
    // The server is ahead of everything predicted: snap forward.
    onServerState(200, { x: 9, v: 0 });
    expect([p.tick, p.state]).toEqual([200, { x: 9, v: 0 }]);
    // The client ran further ahead than the buffer holds: snap back to the server.
    for (let i = 0; i < 20; i++) p.predict(1);
    onServerState(205, { x: 11, v: 0 });
    expect([p.tick, p.state]).toEqual([205, { x: 11, v: 0 }]);
  });
});
