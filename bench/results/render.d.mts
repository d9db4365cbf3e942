/** One goal of bench/RESULTS.md, its figure read from its results file. */
export interface ResultRow {
  area: string;
  goal: string;
  target: string;
  figure: string;
  met: boolean;
  command: string;
  date: string;
  file: string;
}
export const RESULTS_MD: string;
export function rows(dir?: string): ResultRow[];
export function render(dir?: string): string;
