export * from './infrastructure';
export * from './run-service-main';
