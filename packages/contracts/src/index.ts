export * from './principal';
export * from './events';
export * from './credential-formats';
