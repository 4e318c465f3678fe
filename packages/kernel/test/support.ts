import type { RequestListener } from 'node:http';

/**
 * A handler that answers `/refused` 401 `refused` without reading its body, and any other path `read <n>` once it has
 * read the whole body (n bytes): what the tests of 100-continue and of the lingering time send bodies to.
 */
export const refusingOrReading: RequestListener = (req, res) => {
  if (req.url === '/refused') {
    res.statusCode = 401;
    return void res.end('refused');
  }
  let length = 0;
  req.on('data', (chunk: Buffer) => {
    length += chunk.length;
  });
  req.on('end', () => res.end(`read ${length}`));
};
