export * from './infrastructure';
export * from './kept-secret';
export * from './run-service-main';
