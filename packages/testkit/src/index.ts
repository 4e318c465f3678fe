export * from './free-port';
export * from './metrics-text';
export * from './nats-server';
export * from './provider-simulator';
export * from './temp-dir';
export * from './wait-for';
