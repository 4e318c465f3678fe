import { clientKey, compileAddressList } from './address-keys';

describe('the client key of an address', () => {
  it('is an IPv4 address itself, also when IPv4-mapped', () => {
    expect(clientKey('203.0.113.7')).toBe('203.0.113.7');
    expect(clientKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('is the IPv4 address of an IPv4-mapped address written in hex, not a /64 all of them share', () => {
    expect(clientKey('::ffff:cb00:7107')).toBe('203.0.113.7');
    expect(clientKey('0:0:0:0:0:FFFF:C633:6407')).toBe('198.51.100.7');
    expect(clientKey('::ffff:cb00:7107')).not.toBe(clientKey('::ffff:c633:6407'));
  });

  it('is the IPv4 address of an IPv4-mapped address written out in full with its dotted quad, not 0.0.0.0', () => {
    expect(clientKey('0:0:0:0:0:ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientKey('0::FFFF:198.51.100.7')).toBe('198.51.100.7');
    expect(clientKey('64:ff9b::203.0.113.7')).toBe('64:ff9b:0:0::/64');
  });

  it("is an IPv6 address's /64, however the address is written", () => {
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0DB8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8::5')).toBe('2001:db8:0:0::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });

  it('lists addresses and CIDRs; an empty list holds none', () => {
    const listed = compileAddressList('198.51.100.7, 2001:db8:5::/48');
    expect(listed('198.51.100.7')).toBe(true);
    expect(listed('198.51.100.8')).toBe(false);
    expect(listed('2001:db8:5:1::9')).toBe(true);
    expect(compileAddressList('')('198.51.100.7')).toBe(false);
    expect(() => compileAddressList('not an address')).toThrow();
  });
});
