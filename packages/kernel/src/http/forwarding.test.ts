import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { compileTrustProxy, forwardedView, trustProxySetting } from './forwarding';

const requestFrom = (peer: string, headers: Record<string, string>) => {
  const socket = new Socket();
  Object.defineProperty(socket, 'remoteAddress', { value: peer });
  const req = new IncomingMessage(socket);
  req.headers = headers;
  return req;
};

describe('forwarding headers', () => {
  const claims = {
    host: 'api.example',
    'x-forwarded-for': '203.0.113.9, 10.0.0.5',
    'x-forwarded-host': 'evil.example',
    'x-forwarded-proto': 'https',
    'x-forwarded-prefix': '/gw',
  };

  it('are ignored from a peer TRUST_PROXY does not name', () => {
    expect(forwardedView(requestFrom('198.51.100.1', claims), compileTrustProxy('false'))).toEqual({
      clientAddress: '198.51.100.1',
      protocol: 'http',
      host: 'api.example',
      prefix: '',
      fromTrustedProxy: false,
    });
    expect(forwardedView(requestFrom('198.51.100.1', claims), compileTrustProxy('loopback')).host).toBe(
      'api.example',
    );
  });

  it('are believed from a trusted peer, the client being the first untrusted hop from the right', () => {
    const view = forwardedView(requestFrom('127.0.0.1', claims), compileTrustProxy('loopback, 10.0.0.0/8'));
    expect(view).toEqual({
      clientAddress: '203.0.113.9',
      protocol: 'https',
      host: 'evil.example',
      prefix: '/gw',
      fromTrustedProxy: true,
    });
    // Only the loopback hop is trusted: the private address that forwarded is the client.
    expect(forwardedView(requestFrom('127.0.0.1', claims), compileTrustProxy('loopback')).clientAddress).toBe(
      '10.0.0.5',
    );
  });

  it('refuses a setting that trusts everyone, or one that does not parse', () => {
    expect(() => compileTrustProxy('true')).toThrow();
    expect(trustProxySetting('false').safeParse('not-an-address').success).toBe(false);
    expect(trustProxySetting('false').safeParse('10.0.0.0/8, loopback').success).toBe(true);
  });
});
