import './express-augment';

export * from './clock';
export * from './common-config';
export * from './config';
export * from './errors';
export * from './http/envelope';
export * from './http/error-middleware';
export * from './http/metrics';
export * from './http/openapi';
export * from './http/openapi-serve';
export * from './http/request-id';
export * from './http/service-app';
export * from './http/validate';
export * from './lifecycle';
export * from './logger';
export * from './principal-seal';
export * from './request-context';
export * from './service';
