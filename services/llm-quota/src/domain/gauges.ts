/**
 * `percent` of a gauge (spec 2.2): used / limit as a whole percentage, rounded half up. It reads 100
 * only once the limit is reached (99.5 % to 99.99 % read 99) and may exceed 100 (soft_downgrade, or
 * usage recorded after a limit was lowered). A zero limit allows nothing, so it always reads 100.
 */
export function percentOf(used: number, limit: number): number {
  if (limit <= 0) return 100;
  // to 12 significant digits: binary floating point makes 1130 / 1000 × 100 112.999…, which would read 112
  const exact = Number(((used * 100) / limit).toPrecision(12));
  if (used < limit) return Math.min(99, Math.round(exact));
  return Math.floor(exact);
}

/** Costs are counted in millionths of the plan currency, as integers, so sums never drift. */
export const COST_SCALE = 1_000_000;
export const costToMicros = (cost: number): number => Math.round(cost * COST_SCALE);
export const microsToCost = (micros: number): number => Math.round(micros) / COST_SCALE;
