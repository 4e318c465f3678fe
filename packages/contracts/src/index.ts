export * from './credential-formats';
export * from './events';
export * from './principal';
