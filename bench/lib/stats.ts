// Percentiles over latency samples (nearest-rank on a sorted copy).

export function sortedCopy(samples: readonly number[]): number[] {
  return Array.from(samples).sort((a, b) => a - b);
}

/** Nearest-rank percentile, p in [0, 100], of an already sorted array. */
export function percentileSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  const idx = Math.min(sorted.length - 1, Math.max(0, rank - 1));
  return sorted[idx];
}

/** 101 points (p0..p100) describing the distribution, for CDF charts. */
export function cdfPoints(sorted: readonly number[]): number[] {
  const out: number[] = [];
  for (let p = 0; p <= 100; p++) out.push(round(percentileSorted(sorted, p), 2));
  return out;
}

export function round(v: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/** The middle value of the samples (the upper of the two middle ones for an even count). */
export function median(samples: readonly number[]): number {
  return sortedCopy(samples)[samples.length >> 1]!;
}

/**
 * Two arms measured alternately (e.g. direct and relayed): every round of each, each arm's
 * median (2 decimals) as `<arm>Median`, and `ratio` = other's median / base's (3 decimals).
 */
export function armsSummary(runs: Record<string, number[]>, base: string, other: string): Record<string, unknown> {
  const m = (arm: string): number => median(runs[arm] ?? []);
  return { ...runs, [`${base}Median`]: round(m(base), 2), [`${other}Median`]: round(m(other), 2), ratio: round(m(other) / m(base), 3) };
}
