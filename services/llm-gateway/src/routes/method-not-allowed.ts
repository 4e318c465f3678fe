import type { Router } from 'express';

/** The gateway's routes and their methods: any other method answers 405 with `Allow`. */
const METHODS: Record<string, string[]> = {
  '/v1/chat/completions': ['POST'],
  '/v1/embeddings': ['POST'],
  '/v1/rerank': ['POST'],
  '/v1/models': ['GET', 'HEAD', 'POST', 'PUT'],
  '/v1/models/*id': ['GET', 'HEAD', 'PATCH', 'DELETE'],
  '/v1/defaults': ['GET', 'HEAD'],
  '/v1/providers': ['GET', 'HEAD'],
  '/v1/providers/:name': ['PUT', 'DELETE'],
  '/v1/test': ['POST'],
  '/v1/images/generations': ['POST'],
  '/v1/audio/transcriptions': ['POST'],
};

export function mountMethodNotAllowed(router: Router): void {
  for (const [path, allowed] of Object.entries(METHODS)) {
    router.all(path, (req, res) => {
      res
        .status(405)
        .set('allow', allowed.join(', '))
        .json({
          error: 'METHOD_NOT_ALLOWED',
          message: `${req.method} is not allowed here; use ${allowed.join(' or ')}`,
          code: 'METHOD_NOT_ALLOWED',
          status: 405,
          requestId: req.id,
        });
    });
  }
}
