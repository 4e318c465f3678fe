export * from './free-port';
export * from './log-lines';
export * from './metrics-text';
export * from './nats-server';
export * from './outage-server';
export * from './provider-simulator';
export * from './temp-dir';
export * from './wait-for';
