import { claimsForScope } from './provider';

describe('the claims a scope gives (userinfo)', () => {
  const claims = { sub: 'u1', email: 'ada@example.com', email_verified: true, name: 'Ada' };

  it('gives each named scope its claims, and sub always', () => {
    expect(claimsForScope(claims, 'openid')).toEqual({ sub: 'u1' });
    expect(claimsForScope(claims, 'openid email')).toEqual({
      sub: 'u1',
      email: 'ada@example.com',
      email_verified: true,
    });
  });

  it('gives nothing for a scope named like a member every object has (an operator PASSWORD_SCOPE)', () => {
    expect(claimsForScope(claims, 'openid constructor toString __proto__')).toEqual({ sub: 'u1' });
  });
});
