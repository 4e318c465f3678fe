import './express-augment';

export * from './aes-gcm';
export * from './clock';
export * from './common-config';
export * from './config';
export * from './errors';
export * from './http/admin-server';
export * from './http/backpressure';
export { FIXED_SECURITY_HEADERS } from './http/client-error';
export * from './http/dependency-metrics';
export * from './http/envelope';
export * from './http/error-middleware';
export * from './http/forwarding';
export {
  markSuspectJson,
  suspectJsonRefusal,
  // the legacy Messages parser's name for it, from when it refused `__proto__` keys only
  suspectJsonRefusal as protoKeyRefusal,
} from './http/json-body-guards';
export type { LeanRequest, LeanRoute } from './http/lean-routes';
export * from './http/metrics';
export * from './http/openapi';
export * from './http/openapi-serve';
export * from './http/plain-metrics';
export * from './http/request-id';
export * from './http/service-app';
export * from './http/service-fetch';
export * from './http/service-lookup';
export * from './http/validate';
export * from './internal-secret';
export * from './lifecycle';
export * from './logger';
export * from './principal-seal';
export * from './request-context';
export * from './service';
