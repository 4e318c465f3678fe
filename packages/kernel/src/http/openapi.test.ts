import { Validator } from '@seriousme/openapi-schema-validator';
import { z } from 'zod';
import { buildOpenApiDocument, ErrorEnvelopeSchema } from './openapi';

describe('OpenAPI documents from route schemas', () => {
  const body = z.object({ name: z.string().min(1), expiresAt: z.iso.datetime() });
  const doc = buildOpenApiDocument({
    title: 'Test',
    version: '1',
    serverUrl: 'http://localhost:8080',
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    routes: [
      {
        method: 'post',
        path: '/v2/things/:thingId',
        summary: 'make a thing',
        security: ['bearer'],
        body,
        query: z.object({ limit: z.coerce.number().optional() }),
        responses: {
          200: { description: 'ok', schema: body },
          400: { description: 'bad', schema: ErrorEnvelopeSchema },
        },
      },
      {
        method: 'get',
        path: '/',
        summary: 'status',
        security: [],
        responses: { 200: { description: 'ok' } },
      },
    ],
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc as Parameters<Validator['validate']>[0]);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('turns express params into path parameters and carries the body schema', () => {
    const op = (
      doc.paths as Record<
        string,
        Record<
          string,
          {
            parameters: Array<{ name: string; in: string; required: boolean }>;
            requestBody: { content: Record<string, { schema: { required: string[] } }> };
          }
        >
      >
    )['/v2/things/{thingId}']!.post!;
    expect(op.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'thingId', in: 'path', required: true }),
        expect.objectContaining({ name: 'limit', in: 'query', required: false }),
      ]),
    );
    expect(op.requestBody.content['application/json']!.schema.required).toEqual(['name', 'expiresAt']);
  });
});
