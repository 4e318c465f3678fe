export * from './config';
export { LLM_QUOTA_ROUTES } from './openapi';
export * from './service';
