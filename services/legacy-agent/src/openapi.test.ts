import { createInProcessBus } from '@platform/bus';
import { loadConfig, ManualClock, mountedRoutes, silentLogger } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request from 'supertest';
import { legacyAgentConfigSchema } from './config';
import { LEGACY_ROUTES, legacyApiDocument } from './openapi';
import { createLegacyAgentService } from './service';

type Schema = { required?: string[]; properties?: Record<string, unknown> };

describe('legacy-agent OpenAPI document', () => {
  const doc = legacyApiDocument('http://localhost:8080/legacy');
  const schemas = (doc.components as { schemas: Record<string, Schema> }).schemas;

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc as Parameters<Validator['validate']>[0]);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('names the fields of spec 2.8, 2.9, 2.10, 2.11 and 2.12', () => {
    expect(schemas.LegacyAccessToken!.required).toEqual(
      expect.arrayContaining([
        '_id',
        '_session_token',
        '_p_user',
        'createdWith',
        'restricted',
        'expiresAt',
        '_created_at',
        '_updated_at',
      ]),
    );
    expect(schemas.Assistant!.required).toEqual(
      expect.arrayContaining(['name', 'photo', 'clientToken', 'developerToken', 'lang', 'nlu']),
    );
    expect(schemas.Entity!.required).toEqual(
      expect.arrayContaining(['name', 'automaticallyExtensible', 'useSynonyms', 'data']),
    );
    expect(Object.keys(schemas.Intent!.properties!)).toEqual(
      expect.arrayContaining([
        'name',
        'isWelcome',
        'isFallback',
        'events',
        'disambiguationSentence',
        'inputContexts',
        'outputContexts',
        'utterances',
        'parameters',
        'conditionalResponses',
        'settings',
      ]),
    );
    expect(schemas.MessageReply!.required).toEqual(
      expect.arrayContaining([
        'id',
        'timestamp',
        'sessionId',
        'conversationId',
        'fulfillment',
        'intents',
        'status',
      ]),
    );
    expect(schemas.MessageReply!.required).not.toContain('query');
    expect(schemas.IntentResult!.required).toEqual(
      expect.arrayContaining(['source', 'name', 'confidence', 'isFallback', 'endConversation', 'slots']),
    );
  });

  it('documents Messages failures in the legacy shape and other failures in the envelope', () => {
    type Op = { responses: Record<string, { content?: Record<string, { schema: unknown }> }> };
    const paths = doc.paths as Record<string, Record<string, Op>>;
    const schemaOf = (path: string, method: string, status: string) =>
      paths[path]![method]!.responses[status]!.content!['application/json']!.schema;
    expect(schemaOf('/v1/Messages', 'post', '400')).toEqual({ $ref: '#/components/schemas/MessagesError' });
    expect(schemaOf('/v1/Messages', 'post', '401')).toEqual({ $ref: '#/components/schemas/MessagesError' });
    expect(schemaOf('/v1/intents', 'post', '400')).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
  });
});

describe('legacy-agent OpenAPI coverage and serving', () => {
  const doc = legacyApiDocument('http://localhost:8080/legacy');
  const service = createLegacyAgentService({
    config: loadConfig(legacyAgentConfigSchema, {
      PLATFORM_INTERNAL_SECRET: 's'.repeat(40),
      LOG_LEVEL: 'silent',
      LEGACY_PASSWORD_SCRYPT_COST: '1024',
    }),
    clock: new ManualClock('2026-11-23T10:00:00Z'),
    logger: silentLogger(),
    store: createEmbeddedStore(),
    bus: createInProcessBus(),
  });

  it('documents exactly the routes the app mounts', async () => {
    const mounted = mountedRoutes((await service).handler);
    const operational = ['get /healthz', 'get /readyz', 'get /metrics'];
    const routes = mounted.filter((r) => !operational.includes(r)).sort();
    expect(routes).toEqual(LEGACY_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('serves the document at GET /openapi.json with the forwarded root as its server', async () => {
    const res = await request((await service).handler)
      .get('/openapi.json')
      .set('x-forwarded-host', 'platform.example.com')
      .set('x-forwarded-prefix', '/legacy');
    expect(res.status).toBe(200);
    expect(res.body.servers).toEqual([{ url: 'http://platform.example.com/legacy' }]);
  });

  it('answers accounts, assistants and failed Messages as the document says', async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(doc, 'legacy');
    const check = (path: string, method: string, res: request.Response) => {
      const pointer = `/paths/${path.replaceAll('/', '~1')}/${method}/responses/${res.status}/content/application~1json/schema`;
      const validate = ajv.getSchema(`legacy#${pointer}`);
      expect(validate).toBeDefined();
      expect({ path, status: res.status, valid: validate!(res.body), errors: validate!.errors }).toEqual({
        path,
        status: res.status,
        valid: true,
        errors: null,
      });
    };
    const http = request((await service).handler);
    const signup = await http.post('/v2/auth/signup').send({ username: 'grace', password: 'cobol forever' });
    check('/v2/auth/signup', 'post', signup);
    const session = { 'x-legacy-session-token': signup.body.sessionToken };
    const token = await http
      .post('/v2/auth/accessToken')
      .set(session)
      .send({ expiresAt: '2026-12-01T00:00:00Z' });
    check('/v2/auth/accessToken', 'post', token);
    const bot = await http.post('/v2/bots').set(session).send({ name: 'Helper', lang: 'en' });
    check('/v2/bots', 'post', bot);
    const noUser = await http
      .post('/v1/Messages')
      .set('authorization', `Bearer ${bot.body.clientToken}`)
      .send({ platform: 'web', text: 'hi' });
    expect(noUser.status).toBe(400);
    check('/v1/Messages', 'post', noUser);
    const unknownToken = await http
      .post('/v1/Messages')
      .set('authorization', 'Bearer nope')
      .send({ userId: 'u1', platform: 'web', text: 'hi' });
    expect(unknownToken.status).toBe(401);
    check('/v1/Messages', 'post', unknownToken);
  });
});
