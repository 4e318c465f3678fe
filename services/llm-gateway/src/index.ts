export * from './config';
export * from './gateway-file';
export * from './service';
