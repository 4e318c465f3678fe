export * from './free-port';
export * from './nats-server';
export * from './temp-dir';
export * from './wait-for';
