export * from './config';
export * from './openapi';
export { type AuthDeps, type AuthService, createAuthService } from './service';
