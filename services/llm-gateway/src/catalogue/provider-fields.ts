import { z } from 'zod';

/**
 * What a provider sends in HTTP headers, as HTTP can carry it (RFC 9110: a name is a token, a value holds no control
 * character but tab; a key goes in a header too). The HTTP client refuses anything else at every call, which then
 * fails as if the provider could not be reached: the gateway file and `PUT /v1/providers` refuse it up front.
 */
export const ProviderHeadersSchema = z.record(
  z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'not an HTTP header name'),
  z
    .string()
    .regex(
      /^[\t\x20-\x7e\x80-\xff]*$/,
      'an HTTP header value holds no line break, control or non-Latin-1 character',
    ),
);

/** an API key that can be sent: a key pasted with its line break would fail every call */
export const PROVIDER_KEY_PATTERN = /^[\x21-\x7e]+$/;
const KEY_MESSAGE = 'an API key holds no space, line break or control character';

export const ProviderKeySchema = z.string().min(1).regex(PROVIDER_KEY_PATTERN, KEY_MESSAGE);
