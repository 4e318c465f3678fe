import type { BlobBucket, Collection, Doc, Store } from '@platform/store';
import {
  assistantWithCanonicalLanguages,
  ENTITY_LANGUAGE_KEYED,
  INTENT_LANGUAGE_KEYED,
  withCanonicalLanguages,
} from '../domain/language-tags';
import type {
  ConditionalResponse,
  EntityOccurrence,
  IntentSettings,
  OutputContext,
  Utterance,
} from '../domain/model-types';

/** A legacy account (signup/login). */
export interface AccountDoc {
  _id: string;
  username: string;
  /** lower-cased username: uniqueness ignores letter case */
  usernameKey: string;
  password: { algorithm: 'scrypt'; N: number; r: number; p: number; salt: string; hash: string };
  createdAt: Date;
}

/**
 * A legacy session (signup/login) or access token; both are Parse-style session records (spec 2.8),
 * stored by the sha256 of their value.
 */
export interface SessionDoc {
  _id: string;
  kind: 'session' | 'access_token';
  tokenHash: string;
  /** first characters of the token, shown in lists so an owner can tell tokens apart */
  hint: string;
  userId: string;
  createdWith: { action: string; authProvider: string };
  restricted: boolean;
  expiresAt: Date;
  createdAt: Date;
  updatedAt: Date;
}

/** Failed logins of one username in the current window. */
export interface LoginFailureDoc {
  _id: string;
  count: number;
  windowStart: Date;
  /** the window's end: the store removes the record then (usernames tried and never logged in with would pile up) */
  expiresAt?: Date;
}

export interface AssistantDoc {
  _id: string;
  ownerId: string;
  /** the owning account's username at creation (spec 2.11 `developer`) */
  developer: string;
  name: string;
  description: string;
  lang: string;
  languages: string[];
  photo: { url: string } | null;
  satisfactionOption: boolean | null;
  /** web origins whose pages may call the assistant from a browser (CORS); absent on older documents */
  allowedOrigins?: string[];
  /** public: shown as is */
  clientToken: string;
  clientTokenHash: string;
  developerTokenHash: string;
  /** AES-256-GCM ciphertext of the developer token, readable by the owning account */
  developerTokenSealed: string;
  /** bumped on every change of the assistant's intents or entities; models record the one they learnt */
  dataRevision: number;
  /**
   * How many intents (entities) the assistant holds, creations under way included: a creation takes a place
   * here atomically first, so racing creations never pass the limit. Absent on older assistants: counted at
   * their first creation.
   */
  intentCount?: number;
  entityCount?: number;
  /** the bytes its intents and entities take, stored JSON (`assistant-places.ts`); absent: counted at first creation */
  dataBytes?: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface IntentDoc {
  _id: string;
  assistantId: string;
  name: string;
  nameKey: string;
  isWelcome: boolean;
  isFallback: boolean;
  endConversation: boolean;
  events: string[];
  disambiguationSentence: Record<string, string>;
  inputContexts: string[];
  outputContexts: Record<string, OutputContext[]>;
  utterances: Record<string, Utterance[]>;
  parameters: Record<string, Array<Record<string, unknown>>>;
  conditionalResponses: Record<string, ConditionalResponse>;
  settings: Record<string, IntentSettings>;
  /**
   * the names of the entities its utterances tag, written with them: an entity's deletion or rename reads only the
   * intents naming it here (decision 0122 §4). Absent on intents stored before: given at start, read until then.
   */
  entityNames?: string[];
  createdAt: Date;
  updatedAt: Date;
  /** replaced at every update, which writes only over the version it read (the store's `updateWithRevision`) */
  revision?: string;
}

export interface EntityDoc {
  _id: string;
  assistantId: string;
  name: string;
  nameKey: string;
  automaticallyExtensible: Record<string, boolean>;
  useSynonyms: Record<string, boolean>;
  data: Record<string, EntityOccurrence[]>;
  createdAt: Date;
  updatedAt: Date;
  /** replaced at every update, which writes only over the version it read (the store's `updateWithRevision`) */
  revision?: string;
}

/**
 * What was last trained for one assistant and language (`_id` = `assistantId:lang`). The model's stored form is
 * the blob it names, in the store's `legacy_models` blob bucket (decision 0089).
 */
export interface ModelDoc {
  _id: string;
  assistantId: string;
  lang: string;
  /** the assistant's dataRevision the model was trained from */
  revision: number;
  /** sha256 of the training set; an unchanged set is not retrained (unless an older engine's training made it) */
  fingerprint: string;
  /** the engine's TRAINING_REVISION that made the model (absent: 1); an older one is retrained at start */
  trainingRevision?: number;
  /** false when the language has no training sentences: there is no model to load */
  hasModel: boolean;
  /** the blob holding the engine's stored form (`storedModelForm`, decision 0081), and its length */
  blob?: string;
  bytes?: number;
  /** always 0: versions before blobs read their pieces' count here, and retrain a model with none (decision 0089) */
  chunks?: number;
  trainedAt: Date;
  trainingMs: number;
  /** sha256 of what Messages serve of the assistant's intents at `revision` (absent: written before it was kept) */
  servedFingerprint?: string;
}

export interface ConversationContext {
  name: string;
  /** turns left, counting the next one */
  lifespan: number;
}

/** The state of one user's conversation with one assistant. */
export interface ConversationDoc {
  _id: string;
  assistantId: string;
  userId: string;
  sessionId: string;
  conversationId: string;
  contexts: ConversationContext[];
  /**
   * slots filled so far in this conversation, latest value wins; stored with a dot or a leading `$` of a name,
   * which no stored key may hold, escaped (`slotsForStore`)
   */
  slots: Record<string, string>;
  /**
   * the assistant's language the session's last message was answered in: a message without `lang` is answered in it
   * (kept when a conversation ends; absent on conversations stored before it existed)
   */
  lang?: string;
  startedAt: Date;
  /** refreshed at least every tenth of the idle time while the user talks */
  lastActivityAt: Date;
  /**
   * lastActivityAt + LEGACY_CONVERSATION_IDLE_SECONDS: past it the conversation is over, and the store removes it
   * (TTL index). Absent on conversations stored before it existed: those get it with their user's next message.
   */
  expiresAt?: Date;
  /**
   * a fresh random value at every write: a turn is written only over the version it was answered from (absent on
   * conversations stored before it existed)
   */
  revision?: string;
}

export interface LegacyCollections {
  accounts: Collection<AccountDoc>;
  sessions: Collection<SessionDoc>;
  loginFailures: Collection<LoginFailureDoc>;
  assistants: Collection<AssistantDoc>;
  intents: Collection<IntentDoc>;
  entities: Collection<EntityDoc>;
  models: Collection<ModelDoc>;
  modelBlobs: BlobBucket;
  /** pieces of models stored by versions before blobs (decision 0089): nothing reads them, start removes them */
  olderModelPieces: Collection<{ _id: string }>;
  conversations: Collection<ConversationDoc>;
}

/**
 * The collection with every document it answers read through `read`: what older versions stored as this one
 * stores it. Writes go through as they are; the methods are looked up on `inner` at each call.
 */
function readingAs<T extends Doc>(inner: Collection<T>, read: (doc: T) => T): Collection<T> {
  const readOne = (doc: T | null) => (doc ? read(doc) : null);
  return {
    name: inner.name,
    insertOne: (doc) => inner.insertOne(doc),
    ...(inner.insertMany ? { insertMany: (docs: T[]) => inner.insertMany!(docs) } : {}),
    findOne: async (filter) => readOne(await inner.findOne(filter)),
    find: async (filter, options) => (await inner.find(filter, options)).map(read),
    count: (filter) => inner.count(filter),
    updateOne: (filter, update, options) => inner.updateOne(filter, update, options),
    updateMany: (filter, update) => inner.updateMany(filter, update),
    findOneAndUpdate: async (filter, update, options) =>
      readOne(await inner.findOneAndUpdate(filter, update, options)),
    deleteOne: (filter) => inner.deleteOne(filter),
    deleteMany: (filter) => inner.deleteMany(filter),
  };
}

/**
 * The service's collections. Language tags are kept in canonical case (`pt-BR`) since decision 0122; assistants,
 * intents and entities stored before are read with theirs in canonical case too (`language-tags.ts`).
 */
export function openCollections(store: Store): LegacyCollections {
  return {
    accounts: store.collection<AccountDoc>('legacy_accounts', [{ fields: { usernameKey: 1 }, unique: true }]),
    sessions: store.collection<SessionDoc>('legacy_sessions', [
      { fields: { tokenHash: 1 }, unique: true },
      { fields: { userId: 1 } },
      // an expired session or access token is refused; the store removes it
      { fields: { expiresAt: 1 }, expireAfterSeconds: 0 },
    ]),
    loginFailures: store.collection<LoginFailureDoc>('legacy_login_failures', [
      { fields: { expiresAt: 1 }, expireAfterSeconds: 0 },
    ]),
    assistants: readingAs(
      store.collection<AssistantDoc>('legacy_assistants', [
        { fields: { clientTokenHash: 1 }, unique: true },
        { fields: { developerTokenHash: 1 }, unique: true },
        { fields: { ownerId: 1 } },
        { fields: { allowedOrigins: 1 } },
      ]),
      assistantWithCanonicalLanguages,
    ),
    intents: readingAs(
      store.collection<IntentDoc>('legacy_intents', [
        { fields: { assistantId: 1 } },
        { fields: { assistantId: 1, nameKey: 1 }, unique: true },
        { fields: { assistantId: 1, entityNames: 1 } },
      ]),
      (doc) => withCanonicalLanguages(doc, INTENT_LANGUAGE_KEYED),
    ),
    entities: readingAs(
      store.collection<EntityDoc>('legacy_entities', [
        { fields: { assistantId: 1 } },
        { fields: { assistantId: 1, nameKey: 1 }, unique: true },
      ]),
      (doc) => withCanonicalLanguages(doc, ENTITY_LANGUAGE_KEYED),
    ),
    models: store.collection<ModelDoc>('legacy_models', [{ fields: { assistantId: 1 } }]),
    modelBlobs: store.blobs('legacy_models'),
    olderModelPieces: store.collection('legacy_model_chunks'),
    conversations: store.collection<ConversationDoc>('legacy_conversations', [
      { fields: { assistantId: 1 } },
      // a web page's visitors each leave one: they go once idle, or the collection would only grow
      { fields: { expiresAt: 1 }, expireAfterSeconds: 0 },
    ]),
  };
}
