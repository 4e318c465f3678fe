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
