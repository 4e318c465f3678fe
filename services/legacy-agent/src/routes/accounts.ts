import { jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import type { LegacyDomain } from '../domain';
import { accountToken } from './credentials';
import { accessTokenBody, credentialsBody, loginBody } from './schemas';

/** Legacy accounts and access tokens: `{legacy_url}/v2/auth/...` (never retired with v1). */
export function mountAccountRoutes(router: Router, { accounts }: LegacyDomain): void {
  router.post('/v2/auth/signup', async (req, res) => {
    const body = parseInput(credentialsBody, jsonBody(req));
    res.json(await accounts.signup(body.username, body.password));
  });

  router.post('/v2/auth/login', async (req, res) => {
    const body = parseInput(loginBody, jsonBody(req));
    res.json(await accounts.login(body.username, body.password));
  });

  router.post('/v2/auth/logout', async (req, res) => {
    const auth = await accounts.authenticate(accountToken(req));
    await accounts.logout(auth);
    res.json({ loggedOut: true });
  });

  router.post('/v2/auth/accessToken', async (req, res) => {
    const auth = await accounts.authenticate(accountToken(req));
    const body = parseInput(accessTokenBody, jsonBody(req));
    res.json(await accounts.createAccessToken(auth, new Date(body.expiresAt), body.restricted));
  });

  router.get('/v2/auth/accessToken', async (req, res) => {
    const auth = await accounts.authenticate(accountToken(req));
    res.json(await accounts.listAccessTokens(auth));
  });

  router.delete('/v2/auth/accessToken/:token', async (req, res) => {
    const auth = await accounts.authenticate(accountToken(req));
    res.json(await accounts.revokeAccessToken(auth, String(req.params.token)));
  });
}
