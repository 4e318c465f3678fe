import Ajv2020 from 'ajv/dist/2020';
import { startTestPlatform, type TestPlatform } from '../harness';

type Json = Record<string, unknown>;

/** A copy of a schema tree where every object listing its properties allows no others. */
function closeObjects(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closeObjects);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema as Json)) out[key] = closeObjects(value);
  const extra = out.additionalProperties;
  const open = extra === undefined || (typeof extra === 'object' && Object.keys(extra as Json).length === 0);
  if (out.properties && open) out.additionalProperties = false;
  return out;
}

/**
 * `POST {gateway_url}/v1/responses` answers what `{gateway_url}/openapi.json` publishes, member for member (the
 * document's objects closed, as openapi-conformance does): a text answer, a function call, a cut one, through
 * the edge with the built-in mock model (no gateway file).
 */
describe('the Responses API against its published document', () => {
  let p: TestPlatform;
  let token: string;
  beforeAll(async () => {
    p = await startTestPlatform();
    token = ((await (await fetch(`${p.baseUrl}/v2/login/anonymous`, { method: 'POST' })).json()) as Json)
      .token as string;
    const org = await fetch(`${p.baseUrl}/v2/orgs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ slug: 'responses-doc', name: 'Responses doc' }),
    });
    expect(org.status).toBe(201);
  });
  afterAll(() => p?.stop());

  it('a text answer, a function call and an incomplete answer each match the Response schema', async () => {
    const doc = (await (await fetch(`${p.gatewayUrl}/openapi.json`)).json()) as Json;
    const operation = (doc.paths as Record<string, Record<string, Json>>)['/v1/responses']?.post;
    expect(operation).toBeDefined();
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema({ components: closeObjects(doc.components) }, 'gateway');
    const validate = ajv.compile({ $ref: 'gateway#/components/schemas/Response' });

    const asks: Json[] = [
      { model: 'mock/chat', instructions: 'Be brief', input: 'Hello mock', metadata: { run: 'doc' } },
      {
        model: 'mock/chat',
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'use the tool please' }] }],
        tools: [
          {
            type: 'function',
            name: 'lookup',
            parameters: { type: 'object', properties: { q: { type: 'string' } } },
            strict: false,
          },
        ],
      },
      { model: 'mock/chat', input: 'Tell me a long story', max_output_tokens: 1, user: 'doc-user' },
    ];
    const statuses: string[] = [];
    for (const ask of asks) {
      const res = await fetch(`${p.gatewayUrl}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(ask),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as Json;
      if (!validate(body)) throw new Error(`${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`);
      statuses.push(`${body.status} ${(body.output as Json[]).map((o) => o.type).join(',')}`);
    }
    expect(statuses).toEqual(['completed message', 'completed function_call', 'incomplete message']);
  });
});
