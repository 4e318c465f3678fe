import type { Request } from 'express';

/** The token of `Authorization: Bearer <token>` (any letter case of the scheme), if any. */
export function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** An account credential: `X-Legacy-Session-Token` (a session or access token), else a Bearer access token. */
export function accountToken(req: Request): string | undefined {
  const header = req.headers['x-legacy-session-token'];
  if (typeof header === 'string' && header.trim() !== '') return header.trim();
  return bearerToken(req);
}
