export { createInProcessBus, subjectMatches } from './in-process-bus';
export { createNatsBus, type NatsBusOptions } from './nats-bus';
export * from './port';
