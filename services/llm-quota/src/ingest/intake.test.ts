import { readCompletionEvent } from './intake';

const arrival = new Date('2025-03-15T12:00:30Z');
const WEEK = 7 * 24 * 3_600_000;
const valid = {
  id: 'e1',
  version: 1,
  occurredAt: '2025-03-15T12:00:10Z',
  orgSlug: 'acme',
  userId: 'u1',
  model: 'gpt',
  provider: 'openai',
  usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
  cost: 0.0012345,
};
const read = (event: unknown) => readCompletionEvent(JSON.stringify(event), arrival, WEEK);

describe('reading analytics.llm.completion', () => {
  it('keeps what counting needs, with cost in millionths and unknown fields ignored', () => {
    const intake = read({ ...valid, extra: 'ignored' });
    expect(intake).toEqual({
      ok: true,
      clockAhead: false,
      event: expect.objectContaining({
        id: 'e1',
        userId: 'u1',
        occurredAt: new Date('2025-03-15T12:00:10Z'),
        countedAt: new Date('2025-03-15T12:00:10Z'),
        receivedAt: arrival,
        total_tokens: 10,
        cost_micros: 1235,
      }),
    });
    const noUser = read({ ...valid, userId: undefined });
    expect(noUser.ok && noUser.event.userId).toBeNull();
    expect(noUser.ok && noUser.event.apiKeyId).toBeNull();
    const byKey = read({ ...valid, userId: undefined, apiKeyId: 'k1' });
    expect(byKey.ok && byKey.event.apiKeyId).toBe('k1');
    expect(read({ ...valid, apiKeyId: '' })).toMatchObject({ ok: false, reason: 'invalid_event' });
  });

  it('counts an event whatever its descriptive members say, so a newer gateway is counted by an older consumer', () => {
    const newer = read({
      ...valid,
      endpoint: 'batches',
      outcome: 'expired',
      usageSource: 'estimate',
      stream: 'no',
    });
    expect(newer).toMatchObject({ ok: true, event: { id: 'e1', total_tokens: 10, cost_micros: 1235 } });
  });

  it('counts an event from the future at its arrival time', () => {
    const intake = read({ ...valid, occurredAt: '2025-03-15T13:00:00+01:00' }); // 12:00:00Z: past
    expect(intake.ok && intake.clockAhead).toBe(false);
    const ahead = read({ ...valid, occurredAt: '2025-06-01T00:00:00Z' });
    expect(ahead).toMatchObject({ ok: true, clockAhead: true, event: { countedAt: arrival } });
  });

  it('refuses malformed JSON, invalid events and events older than the limit, saying why', () => {
    expect(readCompletionEvent('{', arrival, WEEK)).toEqual({ ok: false, reason: 'malformed_json' });
    const cases: Array<[unknown, string, string]> = [
      [{ ...valid, version: 2 }, 'invalid_event', 'version'],
      [{ ...valid, id: '' }, 'invalid_event', 'id'],
      [{ ...valid, occurredAt: 'yesterday' }, 'invalid_event', 'occurredAt'],
      [{ ...valid, occurredAt: '2025-03-15T12:00:10' }, 'invalid_event', 'occurredAt'], // no offset
      [{ ...valid, usage: { ...valid.usage, total_tokens: 1.5 } }, 'invalid_event', 'usage.total_tokens'],
      [{ ...valid, cost: -1 }, 'invalid_event', 'cost'],
      [{ ...valid, cost: 1e12 }, 'invalid_event', 'cost'],
      [{ ...valid, orgSlug: 'ACME' }, 'invalid_event', 'orgSlug'],
      [{ ...valid, occurredAt: '2025-03-08T12:00:29Z' }, 'too_old', ''],
      [[], 'invalid_event', '(event)'],
    ];
    for (const [event, reason, field] of cases) {
      const intake = read(event);
      expect(intake).toMatchObject({ ok: false, reason });
      if (field && !intake.ok) {
        const issues = (intake.details as { issues: Array<{ field: string }> }).issues;
        expect(issues.map((i) => i.field)).toContain(field);
      }
    }
    expect(read({ ...valid, occurredAt: '2025-03-08T12:00:31Z' }).ok).toBe(true); // just within a week
  });
});
