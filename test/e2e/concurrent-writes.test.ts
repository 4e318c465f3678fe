import { callJson, type JsonReply, startTestPlatform, type TestPlatform } from '../harness';

/**
 * Concurrent requests through the edge, on the embedded store: whatever the interleaving, no acknowledged
 * change is overwritten by another, no limit is passed, and nothing answers 500. Each race is run several
 * times with many requests at once, so an unguarded read-modify-write loses a change on (nearly) every run.
 */

const SECRET = 'concurrent-writes-internal-secret-0123456789';
const ROUNDS = 3;

const all = <T>(n: number, make: (i: number) => Promise<T>) =>
  Promise.all(Array.from({ length: n }, (_, i) => make(i)));
const statuses = (replies: JsonReply[]) => [...new Set(replies.map((r) => r.status))].sort();

describe('concurrent writes through the edge', () => {
  let p: TestPlatform;

  beforeAll(async () => {
    p = await startTestPlatform({
      env: {
        LEGACY_V1_RETIREMENT_DATE: '2099-01-01',
        LEGACY_PASSWORD_SCRYPT_COST: '1024',
        LEGACY_RETRAIN_DEBOUNCE_MS: '50',
        PLATFORM_INTERNAL_SECRET: SECRET,
        LLM_QUOTA_MAX_USER_OVERRIDES: '5',
        LEGACY_MAX_INTENTS: '5',
        LEGACY_MAX_ENTITIES: '5',
      },
    });
  });
  afterAll(() => p?.stop());

  /** an anonymous user owning a fresh organization */
  async function orgOwner(slug: string): Promise<string> {
    const token = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body.token as string;
    const org = await callJson(`${p.baseUrl}/v2/orgs`, 'POST', { bearer: token, body: { slug, name: slug } });
    expect(org.status).toBe(201);
    return token;
  }

  /** a legacy account with an assistant; its developer token */
  async function assistant(username: string): Promise<string> {
    const signup = await callJson(`${p.legacyUrl}/v2/auth/signup`, 'POST', {
      body: { username, password: 'a long enough password' },
    });
    expect(signup.status).toBe(200);
    const res = await fetch(`${p.legacyUrl}/v2/bots`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-legacy-session-token': signup.body.sessionToken },
      body: JSON.stringify({ name: `${username}'s assistant`, lang: 'en' }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { developerToken: string }).developerToken;
  }

  describe('legacy intents and entities', () => {
    it('keeps every field changed by concurrent updates of one intent', async () => {
      const dev = await assistant('intent-racer');
      for (let round = 0; round < ROUNDS; round++) {
        const created = await callJson(`${p.legacyUrl}/v1/intents`, 'POST', {
          bearer: dev,
          body: { name: `Racing ${round}` },
        });
        expect(created.status).toBe(200);
        const changes: Array<Record<string, unknown>> = [
          { name: `Renamed ${round}` },
          { isWelcome: true },
          { endConversation: true },
          { events: ['WELCOME'] },
          { inputContexts: ['ordering'] },
          { outputContexts: { en: [{ name: 'ordered', lifespan: 2 }] } },
          { disambiguationSentence: { en: 'Did you mean to order?' } },
          { settings: { en: { placeholder: 'Order here', disableInput: false } } },
          { utterances: { en: [{ data: [{ text: 'I would like to order' }] }] } },
          { parameters: { en: [{ name: 'size' }] } },
        ];
        const replies = await all(changes.length, (i) =>
          callJson(`${p.legacyUrl}/v1/intents/${created.body.id}`, 'POST', { bearer: dev, body: changes[i] }),
        );
        expect(statuses(replies)).toEqual([200]);
        const stored = (
          await callJson(`${p.legacyUrl}/v1/intents/${created.body.id}`, 'GET', { bearer: dev })
        ).body;
        for (const change of changes) expect(stored).toMatchObject(change);
      }
    });

    it('keeps every field changed by concurrent updates of one entity', async () => {
      const dev = await assistant('entity-racer');
      for (let round = 0; round < ROUNDS; round++) {
        const created = await callJson(`${p.legacyUrl}/v1/entities`, 'POST', {
          bearer: dev,
          body: {
            name: `size${round}`,
            automaticallyExtensible: { en: false },
            useSynonyms: { en: false },
            data: { en: [{ value: 'small' }] },
          },
        });
        expect(created.status).toBe(200);
        const changes: Array<Record<string, unknown>> = [
          { name: `dimension${round}` },
          { automaticallyExtensible: { en: true } },
          { useSynonyms: { en: true }, data: { en: [{ value: 'large', synonyms: ['big'] }] } },
        ];
        const replies = await all(changes.length, (i) =>
          callJson(`${p.legacyUrl}/v1/entities/${created.body.id}`, 'POST', {
            bearer: dev,
            body: changes[i],
          }),
        );
        expect(statuses(replies)).toEqual([200]);
        const stored = (
          await callJson(`${p.legacyUrl}/v1/entities/${created.body.id}`, 'GET', { bearer: dev })
        ).body;
        for (const change of changes) expect(stored).toMatchObject(change);
      }
    });
  });

  describe('limits', () => {
    it('never holds more intents or entities than an assistant may, however many creations race', async () => {
      const dev = await assistant('limit-racer');
      const intents = await all(20, (i) =>
        callJson(`${p.legacyUrl}/v1/intents`, 'POST', { bearer: dev, body: { name: `Intent ${i}` } }),
      );
      const entities = await all(20, (i) =>
        callJson(`${p.legacyUrl}/v1/entities`, 'POST', {
          bearer: dev,
          body: { name: `entity${i}`, automaticallyExtensible: {}, useSynonyms: {}, data: {} },
        }),
      );
      for (const [replies, path] of [
        [intents, '/v1/intents'],
        [entities, '/v1/entities'],
      ] as const) {
        expect(statuses(replies)).toEqual([200, 409]);
        const listed = await callJson(`${p.legacyUrl}${path}`, 'GET', { bearer: dev });
        expect(listed.body).toHaveLength(5);
        expect(replies.filter((r) => r.status === 200)).toHaveLength(5);
      }
    });
  });

  describe('quota settings', () => {
    it('keeps every model-governance entry added by concurrent PATCHes', async () => {
      const owner = await orgOwner('racing-governance');
      const n = 20;
      const replies = await all(n, (i) =>
        callJson(`${p.gatewayUrl}/v1/quotas/settings`, 'PATCH', {
          bearer: owner,
          body: { models: { downgrade: { [`model-${i}`]: 'mock/chat' } } },
        }),
      );
      expect(statuses(replies)).toEqual([200]);
      const settings = await callJson(`${p.gatewayUrl}/v1/quotas/settings`, 'GET', { bearer: owner });
      expect(Object.keys(settings.body.models.downgrade)).toHaveLength(n);
    });

    it('never stores more user overrides than allowed, however many PATCHes race', async () => {
      const owner = await orgOwner('racing-overrides');
      const replies = await all(20, (i) =>
        callJson(`${p.gatewayUrl}/v1/quotas/settings`, 'PATCH', {
          bearer: owner,
          body: { org_user_quotas: { overrides: { [`user-${i}`]: { rpm: i + 1 } } } },
        }),
      );
      expect(statuses(replies)).toEqual([200, 400]);
      const settings = await callJson(`${p.gatewayUrl}/v1/quotas/settings`, 'GET', { bearer: owner });
      const stored = settings.body.org_user_quotas.overrides as Record<string, { rpm: number }>;
      // exactly the accepted ones are stored, and no more than the limit
      const accepted = replies.flatMap((r, i) => (r.status === 200 ? [`user-${i}`] : []));
      expect(Object.keys(stored).sort()).toEqual(accepted.sort());
      expect(accepted).toHaveLength(5);
    });
  });

  describe('the model catalogue', () => {
    let admin: string;
    beforeAll(async () => {
      const login = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body;
      const granted = await fetch(`${p.upstreams.auth}/internal/users/${login.userId}/platform-admin`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', 'x-platform-internal-secret': SECRET },
        body: JSON.stringify({ granted: true }),
      });
      expect(granted.status).toBe(200);
      admin = login.token;
    });

    it('keeps every member changed by concurrent PATCHes of one model', async () => {
      const created = await callJson(`${p.gatewayUrl}/v1/models`, 'POST', {
        bearer: admin,
        body: {
          model_id: 'racing-model',
          type: 'completion',
          provider_config: { provider: 'mock', model: 'x' },
        },
      });
      expect(created.status).toBe(201);
      const n = 20;
      const replies = await all(n, (i) =>
        callJson(`${p.gatewayUrl}/v1/models/racing-model`, 'PATCH', {
          bearer: admin,
          body: { capabilities: { [`cap_${i}`]: true } },
        }),
      );
      expect(statuses(replies)).toEqual([200]);
      const stored = await callJson(`${p.gatewayUrl}/v1/models/racing-model`, 'GET', { bearer: admin });
      expect(Object.keys(stored.body.capabilities ?? {})).toHaveLength(n);
    });

    it('answers concurrent replacements of one provider without a 500, keeping one of them whole', async () => {
      const n = 20;
      const replies = await all(n, (i) =>
        callJson(`${p.gatewayUrl}/v1/providers/racing-provider`, 'PUT', {
          bearer: admin,
          body: { type: 'mock', headers: { 'x-writer': String(i) } },
        }),
      );
      expect(statuses(replies).every((s) => s === 200 || s === 201)).toBe(true);
      const listed = await callJson(`${p.gatewayUrl}/v1/providers`, 'GET', { bearer: admin });
      const racing = listed.body.data.filter((x: { name: string }) => x.name === 'racing-provider');
      expect(racing).toEqual([expect.objectContaining({ type: 'mock', header_names: ['x-writer'] })]);
    });
  });
});
