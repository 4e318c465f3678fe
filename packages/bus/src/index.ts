export { createInProcessBus, subjectMatches } from './in-process-bus';
export * from './ipc-bus';
export { createNatsBus, type NatsBusOptions } from './nats-bus';
export { natsUrlForLogs } from './nats-connection';
export * from './port';
