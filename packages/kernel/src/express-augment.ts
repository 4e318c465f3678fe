import type { Principal } from '@platform/contracts';

declare global {
  namespace Express {
    interface Request {
      /** the request id (x-request-id), set by the requestId middleware */
      id?: string;
      /** the edge-verified principal; null when the edge sent none */
      principal?: Principal | null;
    }
  }
}
