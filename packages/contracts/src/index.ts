export * from './principal';
export * from './events';
