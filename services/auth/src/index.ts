export * from './config';
export * from './openapi';
export * from './service';
