export * from './config';
export { createEdgeService, type EdgeDeps, type EdgeService } from './service';
