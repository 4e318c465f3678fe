export * from './platform';
export * from './process-platform';
export * from './services';
