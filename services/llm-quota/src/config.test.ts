import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig } from '@platform/kernel';
import { tempDir } from '@platform/testkit';
import { llmQuotaConfigSchema, planCatalogOf } from './config';

const base = { PLATFORM_INTERNAL_SECRET: 'x'.repeat(32) };
const load = (env: Record<string, string>) => loadConfig(llmQuotaConfigSchema, { ...base, ...env });
const issuesOf = (env: Record<string, string>) => {
  try {
    load(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  throw new Error('expected a configuration error');
};

describe('llm-quota configuration', () => {
  it('defaults to the built-in plans with "free" for new organizations', () => {
    const config = load({});
    expect(config.LLM_QUOTA_DEFAULT_PLAN).toBe('free');
    expect(Object.keys(planCatalogOf(config))).toEqual(['free', 'team', 'enterprise']);
    expect(config.LLM_QUOTA_STREAM).toBe('ANALYTICS');
  });

  it('reads a plan catalogue from JSON or from a file', () => {
    const plans = { basic: { limits: { 'llm.rpm': 10 }, currency: 'EUR' } };
    const inline = load({ LLM_QUOTA_PLANS: JSON.stringify(plans), LLM_QUOTA_DEFAULT_PLAN: 'basic' });
    expect(planCatalogOf(inline).basic).toEqual({
      limits: { 'llm.rpm': 10 },
      currency: 'EUR',
      included: {},
      per_user_defaults: {},
    });
    const dir = tempDir('plans-');
    try {
      const file = path.join(dir.dir, 'plans.json');
      writeFileSync(file, JSON.stringify(plans));
      expect(
        Object.keys(planCatalogOf(load({ LLM_QUOTA_PLANS_FILE: file, LLM_QUOTA_DEFAULT_PLAN: 'basic' }))),
      ).toEqual(['basic']);
    } finally {
      dir.remove();
    }
  });

  it('names the key of every bad value', () => {
    expect(issuesOf({ LLM_QUOTA_PLANS: '{' })[0]!.key).toBe('LLM_QUOTA_PLANS');
    const invalidPlan = issuesOf({ LLM_QUOTA_PLANS: JSON.stringify({ p: { limits: { 'llm.rpm': -1 } } }) });
    expect(invalidPlan[0]).toMatchObject({
      key: 'LLM_QUOTA_PLANS',
      message: expect.stringContaining('llm.rpm'),
    });
    expect(issuesOf({ LLM_QUOTA_PLANS: JSON.stringify({ p: { limits: { 'llm.rph': 1 } } }) })[0]!.key).toBe(
      'LLM_QUOTA_PLANS',
    );
    expect(issuesOf({ LLM_QUOTA_DEFAULT_PLAN: 'gold' })[0]).toMatchObject({
      key: 'LLM_QUOTA_DEFAULT_PLAN',
      message: expect.stringContaining('free, team, enterprise'),
    });
    expect(issuesOf({ LLM_QUOTA_PLANS_FILE: '/nonexistent/plans.json' })[0]!.key).toBe(
      'LLM_QUOTA_PLANS_FILE',
    );
    expect(
      issuesOf({ LLM_QUOTA_PLANS: '{"a":{"limits":{}}}', LLM_QUOTA_PLANS_FILE: '/x' }).map((i) => i.key),
    ).toContain('LLM_QUOTA_PLANS_FILE');
    expect(issuesOf({ LLM_QUOTA_EVENT_ID_RETENTION_HOURS: '24' })[0]!.key).toBe(
      'LLM_QUOTA_EVENT_ID_RETENTION_HOURS',
    );
    expect(issuesOf({ LLM_QUOTA_BATCH_MAX: '0' })[0]!.key).toBe('LLM_QUOTA_BATCH_MAX');
  });
});
