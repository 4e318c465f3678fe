import type { LlmCompletionEvent } from '@platform/contracts';
import { parseMetrics } from '@platform/testkit';
import { createGatewayMetrics, MODEL_LABEL_CAP } from './gateway-metrics';

const event = (model: string, provider: string): LlmCompletionEvent =>
  ({
    model,
    provider,
    outcome: 'success',
    usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 },
    cost: 0.5,
  }) as LlmCompletionEvent;

describe("the gateway's metric labels stay bounded", () => {
  it('models past the cap share model="other" (per provider), and every request is still counted', async () => {
    const metrics = createGatewayMetrics({ outboxEvents: async () => 0 });
    for (let i = 0; i < MODEL_LABEL_CAP + 10; i++) metrics.accounted(event(`acme/model-${i}`, 'acme'));
    metrics.accounted(event('acme/model-0', 'acme'));
    metrics.accounted(event('acme/model-55', 'acme'));
    const requests = parseMetrics(await metrics.http.registry.metrics()).filter(
      (s) => s.name === 'llm_gateway_requests_total',
    );
    expect(requests).toHaveLength(MODEL_LABEL_CAP + 1);
    expect(requests.find((s) => s.labels.model === 'acme/model-0')?.value).toBe(2);
    expect(requests.find((s) => s.labels.model === 'other')).toMatchObject({
      labels: { provider: 'acme' },
      value: 11,
    });
    expect(requests.reduce((sum, s) => sum + s.value, 0)).toBe(MODEL_LABEL_CAP + 12);
  });
});
