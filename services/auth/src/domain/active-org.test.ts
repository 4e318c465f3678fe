import type { MembershipDoc } from '../data/collections';
import { resolveActiveOrg } from './active-org';

const m = (orgSlug: string, at: string): MembershipDoc => ({
  _id: orgSlug,
  orgId: `id-${orgSlug}`,
  orgSlug,
  userId: 'u',
  role: 'member',
  createdAt: new Date(at),
});
const memberships = [m('first', '2025-01-01'), m('second', '2025-02-01')];

describe('active organization (spec 5.2 rule 7)', () => {
  it('(a) the organization in the path wins', () => {
    expect(resolveActiveOrg(memberships, 'second', 'first')).toMatchObject({
      membership: { orgSlug: 'second' },
      source: 'path',
    });
  });
  it('a path naming an organization the user is not in resolves to none, never to another', () => {
    expect(resolveActiveOrg(memberships, 'elsewhere', 'first')).toBeNull();
  });
  it('(b) else the persisted activeOrgSlug', () => {
    expect(resolveActiveOrg(memberships, null, 'second')).toMatchObject({
      membership: { orgSlug: 'second' },
      source: 'session',
    });
  });
  it('(c) else the first membership, also when the persisted one was left', () => {
    expect(resolveActiveOrg(memberships, null, null)).toMatchObject({
      membership: { orgSlug: 'first' },
      source: 'first_membership',
    });
    expect(resolveActiveOrg(memberships, null, 'left')).toMatchObject({ membership: { orgSlug: 'first' } });
  });
  it('none without memberships', () => {
    expect(resolveActiveOrg([], null, null)).toBeNull();
  });
});
