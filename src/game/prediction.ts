/**
 * Client-side prediction with rewind and replay: the client applies its own inputs at
 * once, keeps a fixed-size circular buffer of (input, predicted state) per tick, and when the
 * server's authoritative state for an older tick T arrives it rewinds to T, takes the server's
 * state, and replays the buffered inputs T+1..now with the game's step function.
 *
 * Memory is fixed: `capacity` slots, `index = tick % capacity` (the reliable.io sequence-buffer
 * idea). A correction for a tick that has left the buffer, or is newer than anything predicted,
 * throws TickOutOfBufferError: the app decides (usually `reset(tick, state)`). A replay costs at
 * most capacity - 1 steps.
 *
 * Sans-IO and synchronous: the app moves ticks forward with `predict(input)` on its fixed-rate
 * loop and calls `correct(tick, state)` when a server update arrives.
 */
import { GameUsageError, TickOutOfBufferError } from "./errors.js";

export interface PredictionOptions<Input, State> {
  /** Ticks kept (the longest correction delay you can replay, in ticks). Default 128. */
  capacity?: number;
  /** The game's deterministic step: state after applying `input` at `tick` to `state`. */
  step: (state: State, input: Input, tick: number) => State;
  /** When true for (predicted, authoritative), the correction needs no replay. Default: never equal. */
  equals?: (a: State, b: State) => boolean;
  /** The tick and state the client starts from (as given by the server). */
  tick: number;
  state: State;
}

export interface CorrectionResult {
  /** Steps replayed (0 when the prediction matched). */
  replayed: number;
  /** True when the predicted state at the tick differed from the server's. */
  mispredicted: boolean;
}

export class PredictionBuffer<Input, State> {
  readonly capacity: number;
  readonly counters = { predicted: 0, corrections: 0, mispredictions: 0, replayedSteps: 0, maxReplay: 0 };
  readonly #step: (state: State, input: Input, tick: number) => State;
  readonly #equals: ((a: State, b: State) => boolean) | undefined;
  readonly #ticks: Float64Array;
  readonly #inputs: (Input | undefined)[];
  readonly #states: (State | undefined)[];
  #tick: number;
  /** Oldest tick still in the buffer whose state may be replaced by a correction. */
  #oldest: number;

  constructor(options: PredictionOptions<Input, State>) {
    const capacity = options.capacity ?? 128;
    if (!(Number.isInteger(capacity) && capacity >= 2 && capacity <= 65_536)) throw new GameUsageError(`capacity must be an integer in 2..65536, got ${capacity}`);
    this.capacity = capacity;
    this.#step = options.step;
    this.#equals = options.equals;
    this.#ticks = new Float64Array(capacity).fill(-1);
    this.#inputs = new Array<Input | undefined>(capacity).fill(undefined);
    this.#states = new Array<State | undefined>(capacity).fill(undefined);
    this.#tick = this.#oldest = 0;
    this.reset(options.tick, options.state);
  }

  /** The newest predicted tick. */
  get tick(): number {
    return this.#tick;
  }
  /** The predicted state at the newest tick (what the client shows). */
  get state(): State {
    return this.#states[this.#tick % this.capacity]!;
  }
  /** Oldest tick a correction can still target. */
  get oldestTick(): number {
    return this.#oldest;
  }

  /** Forgets everything and starts over from the server's (tick, state). */
  reset(tick: number, state: State): void {
    if (!(Number.isSafeInteger(tick) && tick >= 0)) throw new GameUsageError(`tick must be a non-negative integer, got ${tick}`);
    this.#ticks.fill(-1);
    this.#inputs.fill(undefined);
    this.#states.fill(undefined);
    this.#tick = this.#oldest = tick;
    const i = tick % this.capacity;
    this.#ticks[i] = tick;
    this.#states[i] = state;
  }

  /** Applies the local input for the next tick; returns the predicted state. */
  predict(input: Input): State {
    const tick = this.#tick + 1;
    const state = this.#step(this.state, input, tick);
    const i = tick % this.capacity;
    this.#ticks[i] = tick;
    this.#inputs[i] = input;
    this.#states[i] = state;
    this.#tick = tick;
    // The slot just overwritten held tick - capacity: the window is now (tick - capacity, tick].
    if (tick - this.#oldest >= this.capacity) this.#oldest = tick - this.capacity + 1;
    this.counters.predicted++;
    return state;
  }

  /** The input applied at `tick`, if still buffered. */
  inputAt(tick: number): Input | undefined {
    return this.#has(tick) ? this.#inputs[tick % this.capacity] : undefined;
  }
  /** The predicted (or corrected) state at `tick`, if still buffered. */
  stateAt(tick: number): State | undefined {
    return this.#has(tick) ? this.#states[tick % this.capacity] : undefined;
  }

  /**
   * The server says the state at `tick` was `state`: rewind, apply it, replay inputs
   * tick+1..newest. Ticks before `tick` are dropped (the server has moved past them).
   */
  correct(tick: number, state: State): CorrectionResult {
    if (!this.#has(tick)) throw new TickOutOfBufferError(tick, this.#oldest, this.#tick);
    this.counters.corrections++;
    const i = tick % this.capacity;
    const predicted = this.#states[i]!;
    this.#oldest = tick;
    if (this.#equals?.(predicted, state) === true) return { replayed: 0, mispredicted: false };
    this.counters.mispredictions++;
    this.#states[i] = state;
    let current = state;
    let replayed = 0;
    for (let t = tick + 1; t <= this.#tick; t++) {
      const j = t % this.capacity;
      current = this.#step(current, this.#inputs[j] as Input, t);
      this.#states[j] = current;
      replayed++;
    }
    this.counters.replayedSteps += replayed;
    if (replayed > this.counters.maxReplay) this.counters.maxReplay = replayed;
    return { replayed, mispredicted: true };
  }

  #has(tick: number): boolean {
    return Number.isSafeInteger(tick) && tick >= this.#oldest && tick <= this.#tick && this.#ticks[tick % this.capacity] === tick;
  }
}
