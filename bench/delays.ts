/** `n=… p50 … ms p99 … ms max … ms` of delays in milliseconds, for the benches that time how fast something travels. */
export function delaySummary(delays: readonly number[]): string {
  const sorted = [...delays].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2);
  return `n=${sorted.length}  p50 ${at(0.5)} ms  p99 ${at(0.99)} ms  max ${at(1)} ms`;
}
