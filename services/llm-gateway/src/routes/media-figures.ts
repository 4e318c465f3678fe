import type { Figures, Prepared } from '../inference/gateway-context';

/** A media request's figures: its price (per image, per audio minute) and its time; no token-based carbon. */
export function mediaFigures(prepared: Prepared, price: number): Figures {
  const micros = Math.round(price * 1_000_000);
  return {
    cost: micros / 1_000_000,
    costMicros: micros,
    durationMs: Math.round((performance.now() - prepared.startedAt) * 100) / 100,
    carbon: null,
  };
}
