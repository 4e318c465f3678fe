import { slotsForStore, slotsFromStore } from './conversations';

describe('slots as a conversation stores them', () => {
  it('escapes what no stored key may hold (a dot, a leading $), and reads every name back as it was', () => {
    const slots = {
      'mode.choice': 'plane',
      $when: 'today',
      'rate%': '50',
      '%2E': 'x',
      a$b: 'y',
      to: 'Paris',
    };
    const stored = slotsForStore(slots);
    for (const key of Object.keys(stored)) expect(key).not.toMatch(/\.|^\$/);
    // ordinary names are stored as they were before: conversations of the previous version read the same
    expect(stored.to).toBe('Paris');
    expect(stored.a$b).toBe('y');
    expect(slotsFromStore(stored)).toEqual(slots);
    expect(slotsFromStore(undefined)).toEqual({});
  });
});
