export * from './credential-formats';
export * from './events';
export * from './permissions';
export * from './principal';
