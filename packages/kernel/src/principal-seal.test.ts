import type { Principal } from '@platform/contracts';
import { ManualClock } from './clock';
import { OpenedSeals, openPrincipal, sealPrincipal } from './principal-seal';

const principal: Principal = {
  credential: { kind: 'session', id: 's1' },
  session: { id: 's1', org: null },
  user: { id: 'u1', email: null, anonymous: true, role: null },
  run: { permissions: {}, scopes: [], correlationId: 'r1', sourceWorkspaceId: null },
};
const secret = 'x'.repeat(32);

describe('principal seal', () => {
  it('opens what it sealed', () => {
    expect(openPrincipal(sealPrincipal(principal, secret), secret)).toEqual(principal);
  });

  it('refuses another secret, a changed payload, garbage and an old seal', () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const sealed = sealPrincipal(principal, secret, clock);
    expect(openPrincipal(sealed, 'y'.repeat(32), clock)).toBeNull();
    const [payload, mac] = sealed.split('.');
    const forged = Buffer.from(
      JSON.stringify({ p: { ...principal, user: { ...principal.user, id: 'admin' } }, iat: 1 }),
    ).toString('base64url');
    expect(openPrincipal(`${forged}.${mac}`, secret, clock)).toBeNull();
    expect(openPrincipal(`${payload}`, secret, clock)).toBeNull();
    expect(openPrincipal('garbage.garbage', secret, clock)).toBeNull();
    clock.advance(301_000);
    expect(openPrincipal(sealed, secret, clock)).toBeNull();
  });
});

describe('opened seals (the services-side cache)', () => {
  it('answers a seal it opened before, re-checking its age on every use', () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const seals = new OpenedSeals(secret, clock);
    const sealed = sealPrincipal(principal, secret, clock);
    expect(seals.open(sealed)).toEqual(principal);
    expect(seals.open(sealed)).toEqual(principal);
    expect(seals.size).toBe(1);
    clock.advance(301_000);
    expect(seals.open(sealed)).toBeNull();
    expect(seals.size).toBe(0);
  });

  it('never keeps a seal that fails, and stays bounded', () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const seals = new OpenedSeals(secret, clock, 3);
    const [payload] = sealPrincipal(principal, secret, clock).split('.');
    expect(seals.open(`${payload}.forged`)).toBeNull();
    expect(seals.open(sealPrincipal(principal, 'y'.repeat(32), clock))).toBeNull();
    expect(seals.size).toBe(0);
    for (let i = 0; i < 10; i++) {
      clock.advance(1000);
      expect(seals.open(sealPrincipal(principal, secret, clock))).toEqual(principal);
    }
    expect(seals.size).toBe(3);
  });

  it('hands out a frozen principal: no request can change what the next one receives', () => {
    const seals = new OpenedSeals(secret);
    const opened = seals.open(sealPrincipal(principal, secret))!;
    expect(() => {
      (opened.user as { id: string }).id = 'admin';
    }).toThrow(TypeError);
    expect(() => {
      opened.run.scopes.push('admin');
    }).toThrow(TypeError);
  });
});
