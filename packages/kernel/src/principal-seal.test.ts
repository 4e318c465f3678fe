import type { Principal } from '@platform/contracts';
import { ManualClock } from './clock';
import { openPrincipal, sealPrincipal } from './principal-seal';

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
