import { llmQuotaApiDocument } from './openapi';

type Json = Record<string, unknown>;

/** Every object schema a response may hold that is published closed (`additionalProperties: false`), by path. */
function closedObjects(doc: Json): string[] {
  const components = (doc.components as { schemas: Record<string, Json> }).schemas;
  const closed: string[] = [];
  const seen = new Set<string>();
  // arrays too: their entries are their items
  const walk = (node: unknown, at: string): void => {
    if (typeof node !== 'object' || node === null) return;
    const schema = node as Json;
    if (typeof schema.$ref === 'string') {
      const name = schema.$ref.replace('#/components/schemas/', '');
      if (!seen.has(name)) {
        seen.add(name);
        walk(components[name], `#/components/schemas/${name}`);
      }
      return;
    }
    if (schema.additionalProperties === false) closed.push(at);
    for (const [key, value] of Object.entries(schema)) walk(value, `${at}/${key}`);
  };
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const [method, operation] of Object.entries(item)) {
      walk(operation.responses, `${method} ${path}`);
    }
  }
  return closed;
}

describe("llm-quota's published responses", () => {
  it('are open to fields added later, the breakdown and its items included (spec 9.3)', () => {
    expect(closedObjects(llmQuotaApiDocument('http://localhost:8080/llm'))).toEqual([]);
  });
});
