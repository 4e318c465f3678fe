import { ManualClock, silentLogger } from '@platform/kernel';
import { createEmbeddedStore, type Doc } from '@platform/store';
import { ProviderDestinations } from '../providers/http/destinations';
import { CatalogueAdmin } from './catalogue-admin';
import { catalogueCollections } from './catalogue-store';
import type { ModelEntry } from './model-entry';
import { ProviderAdmin } from './provider-admin';
import { SecretBox } from './secret-box';

const entry = (model_id: string): ModelEntry => ({
  model_id,
  type: 'completion',
  enabled: true,
  provider_config: { provider: 'mock', model: 'm' },
  pricing: { input_per_million: 0, output_per_million: 0 },
});
const operator = { kind: 'operator' as const, userId: null };

function setup() {
  const store = createEmbeddedStore();
  const clock = new ManualClock('2026-11-24T10:00:00Z');
  const collections = catalogueCollections(store);
  let announced = 0;
  const admin = new CatalogueAdmin({
    store,
    collections,
    clock,
    logger: silentLogger(),
    changed: async () => {
      announced++;
    },
  });
  return { store, clock, collections, admin, announced: () => announced };
}

describe('CatalogueAdmin bulk replace journal', () => {
  it('a replace interrupted by a crash is rolled back at the next start', async () => {
    const { store, collections, admin } = setup();
    await collections.providers.insertOne({ _id: 'mock', type: 'mock', updatedAt: new Date() });
    await admin.replaceAll([entry('old/a'), entry('old/b')], operator, null);
    // a process died midway: its journal holds the old catalogue, the models collection is half new
    const previous = await collections.models.find({});
    await store.collection<Doc & { previous: unknown; startedAt: Date }>('llm_catalogue_journal').insertOne({
      _id: 'models',
      previous,
      startedAt: new Date(),
    });
    await collections.models.deleteMany({});
    await collections.models.insertOne({ ...previous[0]!, _id: 'new/half' });

    expect(await admin.recover()).toBe(true);
    expect((await collections.models.find({})).map((m) => m._id).sort()).toEqual(['old/a', 'old/b']);
    expect(await admin.recover()).toBe(false);
  });

  it('a second replace while one is under way is refused; a stale journal is rolled back first', async () => {
    const { store, clock, collections, admin } = setup();
    await admin.replaceAll([entry('keep/me')], operator, null);
    const journal = store.collection<Doc & { previous: unknown; startedAt: Date }>('llm_catalogue_journal');
    await journal.insertOne({
      _id: 'models',
      previous: await collections.models.find({}),
      startedAt: clock.now(),
    });
    await expect(admin.replaceAll([entry('x/y')], operator, null)).rejects.toMatchObject({
      code: 'BULK_REPLACE_IN_PROGRESS',
    });
    clock.advance(11 * 60_000);
    expect(await admin.replaceAll([entry('x/y')], operator, null)).toEqual({ deleted: 1, inserted: 1 });
    expect((await collections.models.find({})).map((m) => m._id)).toEqual(['x/y']);
    expect(await journal.count({})).toBe(0);
  });
});

describe('CatalogueAdmin concurrent deletes', () => {
  it('two deletes of one model at once: one succeeds and is audited, the other is 404 MODEL_NOT_FOUND', async () => {
    const { store, collections, admin } = setup();
    await collections.providers.insertOne({ _id: 'mock', type: 'mock', updatedAt: new Date() });
    await admin.create(entry('gone/soon'), operator, null);
    const results = await Promise.allSettled([
      admin.remove('gone/soon', operator, 'first'),
      admin.remove('gone/soon', operator, 'second'),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({
      reason: { code: 'MODEL_NOT_FOUND' },
    });
    const audit = await store.collection<Doc & { action: string }>('llm_catalogue_audit').find({});
    expect(audit.filter((a) => a.action === 'delete')).toHaveLength(1);
  });

  it('two deletes of one provider at once: one succeeds and is audited, the other is 404 PROVIDER_NOT_FOUND', async () => {
    const { store, collections, admin } = setup();
    const providers = new ProviderAdmin({
      collections,
      box: new SecretBox('test-secret'),
      catalogue: admin,
      destinations: new ProviderDestinations(),
    });
    await providers.put('spare', { type: 'mock' }, operator, null);
    const results = await Promise.allSettled([
      providers.remove('spare', operator, 'first'),
      providers.remove('spare', operator, 'second'),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({
      reason: { code: 'PROVIDER_NOT_FOUND' },
    });
    const audit = await store.collection<Doc & { action: string }>('llm_catalogue_audit').find({});
    expect(audit.filter((a) => a.action === 'provider.delete')).toHaveLength(1);
  });
});
