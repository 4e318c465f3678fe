import { createHash, randomBytes, randomUUID } from 'node:crypto';

/**
 * Credential secrets. Tokens and keys carry at least 122 random bits, so a fast unsalted sha256 is
 * the right stored form (no dictionary to attack, and the edge keys its cache by the same hash).
 */
export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

/** 256 random bits as 43 base64url characters (ACCESS_TOKEN_PATTERN, WORKSPACE_API_KEY_PATTERN). */
const secret256 = (): string => randomBytes(32).toString('base64url');

export const newAccessToken = (): string => `at:${secret256()}`;
export const newWorkspaceApiKey = (): string => `wak_${secret256()}`;
/** spec 2.7: `iak_{orgSlug}_{uuid}` */
export const newOrgApiKey = (orgSlug: string): string => `iak_${orgSlug}_${randomUUID()}`;

export const newId = (): string => randomUUID();
