import { z } from 'zod';
import { InvalidInput } from '../errors';
import { parseInput } from './validate';

describe('parseInput', () => {
  const schema = z.object({
    input: z.union([z.string(), z.array(z.looseObject({ id: z.string().max(3).optional() }))]),
  });
  const issuesOf = (value: unknown) => {
    try {
      parseInput(schema, value);
    } catch (err) {
      return ((err as InvalidInput).details as { issues: unknown[] }).issues;
    }
    throw new Error('parsed');
  };

  it("names what is wrong inside the union's shape that took the value, not just the union", () => {
    expect(issuesOf({ input: [{ id: 'ok' }, { id: 'too long' }] })).toEqual([
      { field: 'input.1.id', message: expect.stringMatching(/3/) },
    ]);
    expect(issuesOf({ input: [{ id: 42 }] })).toEqual([
      { field: 'input.0.id', message: expect.stringMatching(/string/) },
    ]);
  });

  it('keeps one issue at the union when no shape took the value', () => {
    expect(issuesOf({ input: 5 })).toEqual([{ field: 'input', message: 'Invalid input' }]);
  });
});

describe('parseInput: unions no shape clearly took', () => {
  const issuesOf = (schema: z.ZodType, value: unknown) => {
    try {
      parseInput(schema, value);
    } catch (err) {
      expect(err).toBeInstanceOf(InvalidInput);
      return ((err as InvalidInput).details as { issues: Array<{ field: string; message: string }> }).issues;
    }
    throw new Error('parsed');
  };
  // embeddings' and text completions' input: OpenAI's four shapes, with a message saying them
  const tokens = z.array(z.number().int().nonnegative());
  const texts = z.object({
    input: z.union([z.string(), z.array(z.string()), tokens.min(1), z.array(tokens.min(1))], {
      error: 'a string, strings, token ids or token-id arrays',
    }),
  });

  it("keeps the union's own message when no shape clearly took the value, never naming a branch's guess", () => {
    expect(issuesOf(texts, { input: [{}] })).toEqual([
      { field: 'input', message: 'a string, strings, token ids or token-id arrays' },
    ]);
    // two objects, each refused at a different member: which one was meant is a guess
    const shapes = z.object({
      item: z.union([
        z.object({ type: z.literal('text'), text: z.string() }),
        z.object({ type: z.literal('image'), url: z.string() }),
      ]),
    });
    expect(issuesOf(shapes, { item: { type: 'image', url: 5 } })).toEqual([
      { field: 'item', message: 'Invalid input' },
    ]);
  });

  it('among shapes as deep, names the one that took most of the value before refusing it', () => {
    expect(issuesOf(texts, { input: ['a', 7] })).toEqual([
      { field: 'input.1', message: expect.stringMatching(/string/) },
    ]);
    // token-id arrays, the last item not one: not "item 0 is not a string"
    expect(issuesOf(texts, { input: [[1, 2], 'x'] })).toEqual([
      { field: 'input.1', message: expect.stringMatching(/array/) },
    ]);
    // one shape went further in: it says what is wrong
    expect(issuesOf(texts, { input: [[1.5]] })).toEqual([
      { field: 'input.0.0', message: expect.stringMatching(/int/) },
    ]);
  });

  it('looks into a union inside a union', () => {
    const nested = z.object({
      input: z.union([z.string(), z.union([z.number(), z.array(z.object({ id: z.string() }))])]),
    });
    expect(issuesOf(nested, { input: [{ id: 5 }] })).toEqual([
      { field: 'input.0.id', message: expect.stringMatching(/string/) },
    ]);
  });

  it('a union over a very long array of wrong items is a 400, not a crash', () => {
    const items = z.object({ input: z.union([z.string(), z.array(z.object({ id: z.string() }))]) });
    const issues = issuesOf(items, { input: new Array(200_000).fill(5) });
    expect(issues[0]).toEqual({ field: 'input.0', message: expect.stringMatching(/object/) });
  });
});
