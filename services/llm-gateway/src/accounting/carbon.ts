/**
 * The footprint of one inference request, following the EcoLogits LLM-inference method (v1.0,
 * GenAI Impact; decision record 0047): usage phase only, from the number of output tokens, the model's
 * active parameters (billions), the measured request latency, a PUE and a grid emission factor.
 */
export const ECOLOGITS = {
  /** GPU energy per output token: alpha * P_active + beta (Wh) */
  alpha: 8.91e-5,
  beta: 1.43e-3,
  /** generation latency per output token: A * P_active + B (s) */
  latencyA: 8.02e-4,
  latencyB: 2.23e-2,
  /** server power without GPUs (kW), GPUs installed per server, memory per GPU (GB) */
  serverKw: 1,
  gpusInstalled: 8,
  gpuMemoryGb: 80,
  /** weights quantized to 4 bits; 1.2 memory overhead */
  quantizationBits: 4,
  memoryOverhead: 1.2,
} as const;

export interface CarbonEstimate {
  energy_kwh: number;
  gwp_kgco2eq: number;
}

export function estimateCarbon(input: {
  outputTokens: number;
  parametersBillion: number | undefined;
  requestSeconds: number;
  pue: number;
  gridKgCo2PerKwh: number;
}): CarbonEstimate | null {
  const p = input.parametersBillion;
  if (p === undefined || input.outputTokens <= 0) {
    return p === undefined ? null : { energy_kwh: 0, gwp_kgco2eq: 0 };
  }
  const e = ECOLOGITS;
  const gpus = Math.max(1, Math.ceil((e.memoryOverhead * p * e.quantizationBits) / 8 / e.gpuMemoryGb));
  const gpuWh = input.outputTokens * (e.alpha * p + e.beta);
  const latency = Math.min(input.outputTokens * (e.latencyA * p + e.latencyB), input.requestSeconds);
  const serverKwh = (latency / 3600) * e.serverKw * (gpus / e.gpusInstalled);
  const energy = input.pue * (serverKwh + (gpus * gpuWh) / 1000);
  return { energy_kwh: round(energy), gwp_kgco2eq: round(energy * input.gridKgCo2PerKwh) };
}

const round = (v: number) => Number(v.toPrecision(6));
