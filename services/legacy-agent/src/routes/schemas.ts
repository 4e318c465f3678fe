import { z } from 'zod';
import { byCanonicalLanguage, canonicalLanguage } from '../domain/language-tags';
import { DEFAULT_SETTINGS } from '../domain/model-types';

/**
 * Request schemas of every legacy route, kept beside the routes so OpenAPI documents can be generated
 * from them. Unknown fields are dropped (clients may post back what they read, ids included).
 */

/** a language tag (BCP 47 shape, in any letter case: tags are case-insensitive) */
export const LANG_PATTERN = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;
/**
 * names of entities, slots, contexts and events: letters, digits, `_`, `.`, `-`, no spaces; after the first, combining
 * marks too (Devanagari vowel signs, Arabic harakat, a decomposed accent: parts of a letter to whoever types them)
 */
export const SYMBOL_PATTERN = /^[\p{L}\p{N}_][\p{L}\p{M}\p{N}_.-]{0,63}$/u;
/** a channel is a key of the stored intent: no dot (the store refuses one in a key; such an intent answered 500) */
const CHANNEL_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

const langTag = z
  .string()
  // a tag that long names no language, and would push the model's blob id past the store's 200 characters
  .max(35)
  .regex(LANG_PATTERN, 'must be a language code such as "en" or "pt-BR"');
/**
 * A visitor's language tag (Messages' `lang`, looked up among the assistant's languages, never stored): BCP 47 with
 * extensions and private use too, as phones send them (Android 14's `fr-CA-u-fw-mon`), in the recommended case; `_`
 * separating subtags, as Facebook Messenger's and Java's locales do (`en_US`), is taken as `-`.
 */
const visitorLangCode = z
  .string()
  .max(64)
  .regex(/^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$/, 'must be a language tag such as "en" or "pt-BR"')
  .transform((tag) => canonicalLanguage(tag.replaceAll('_', '-')));
/** A language code, in any letter case, kept in the case BCP 47 recommends (`pt-br` is `pt-BR`). */
export const langCode = langTag
  .transform(canonicalLanguage)
  .meta({ description: 'language code; any letter case, kept as `pt-BR`, `zh-Hant-TW`' });
/**
 * A name holding a combining mark in NFC: one sent in two Unicode forms (`é`, `e\u0301`) is one name. A name without
 * one is kept as sent, as before marks were accepted: NFC changes a few letters (U+212B Å, CJK compatibility
 * ideographs), and stored names are matched as they were written (an entity by the intents tagging it).
 */
const composedWhenMarked = (name: string) => (/\p{M}/u.test(name) ? name.normalize('NFC') : name);
const symbolText = (what: string) =>
  z
    .string()
    .overwrite(composedWhenMarked)
    .regex(SYMBOL_PATTERN, `${what} must be 1-64 letters, digits, "_", "." or "-"`);
/** A name a developer gives: it becomes a key of slots and of stored objects, where `__proto__` sets a prototype. */
const symbol = (what: string) =>
  symbolText(what).refine((name) => name !== '__proto__', `${what} "__proto__" is reserved`);
const text = (max: number) => z.string().max(max);
const nonEmptyText = (max: number) => z.string().trim().min(1).max(max);
const url = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048);
/**
 * A map by language code, its keys kept in canonical case: two keys naming one language (`pt-br`, `pt-BR`) become
 * one when their contents are equal, and are refused, both named, when they differ (neither is dropped).
 */
const byLang = <T extends z.ZodType>(value: T) =>
  z.record(langTag, value).transform((map, ctx) => {
    const { map: canonical, clashes } = byCanonicalLanguage(map);
    for (const { kept, other } of clashes)
      ctx.addIssue({
        code: 'custom',
        path: [other],
        message: `"${kept}" and "${other}" are the same language with different content: send one of them`,
      });
    return clashes.length > 0 ? z.NEVER : canonical;
  });

// ---- accounts and tokens ----------------------------------------------------------------------

export const credentialsBody = z.object({
  username: z
    .string()
    .trim()
    .regex(/^[\p{L}\p{N}._@+-]{3,64}$/u, 'must be 3-64 letters, digits or ". _ @ + -"'),
  password: z.string().min(8, 'must be at least 8 characters').max(256),
});

export const loginBody = z.object({
  username: z.string().trim().min(1).max(64),
  password: z.string().min(1).max(256),
});

export const accessTokenBody = z.object({
  expiresAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }),
  restricted: z
    .boolean()
    .default(false)
    .meta({ description: 'a restricted token cannot create or revoke access tokens' }),
});

// ---- assistants ---------------------------------------------------------------------------------

export const createBotBody = z
  .object({
    name: nonEmptyText(100),
    lang: langCode,
    languages: z.array(langCode).min(1).max(20).optional(),
    description: text(2000).default(''),
    photo: z.object({ url }).nullable().default(null),
    satisfactionOption: z.boolean().nullable().default(null),
  })
  .transform((bot) => ({ ...bot, languages: [...new Set(bot.languages ?? [bot.lang])] }))
  .refine((bot) => bot.languages.includes(bot.lang), {
    message: 'must include the default language `lang`',
    path: ['languages'],
  });

/**
 * A web origin as a browser sends it in `Origin`: scheme, host and port (when not the default), nothing
 * else; lower-cased. No wildcards: each site is named.
 */
export const webOrigin = z
  .string()
  .max(300)
  .transform((value, ctx) => {
    let parsed: URL | undefined;
    try {
      parsed = new URL(value);
    } catch {
      parsed = undefined;
    }
    const bare =
      parsed &&
      /^https?:$/.test(parsed.protocol) &&
      parsed.pathname === '/' &&
      !parsed.search &&
      !parsed.hash &&
      !parsed.username &&
      !parsed.password &&
      !value.includes('*') &&
      !/[?#]$/.test(value);
    if (!parsed || !bare) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be an origin: http(s)://host[:port], without path, query or wildcard',
      });
      return z.NEVER;
    }
    return parsed.origin;
  });

/** `PATCH /v1/bots`: the fields a developer token may change; absent ones stay as they are. */
export const updateBotBody = z
  .object({
    name: nonEmptyText(100),
    description: text(2000),
    photo: z.object({ url }).nullable(),
    satisfactionOption: z.boolean().nullable(),
    allowedOrigins: z
      .array(webOrigin)
      .max(50)
      .transform((origins) => [...new Set(origins)])
      .meta({
        description:
          'web origins (`https://shop.example`) whose pages may call Messages from a browser (CORS); none by default',
      }),
  })
  .partial()
  .strict();

// ---- intents (spec 2.9) ---------------------------------------------------------------------------

const sentencePart = z
  .object({
    text: z.string().min(1).max(1000),
    entity: symbol('entity').optional(),
    slot_name: symbol('slot_name').optional(),
  })
  .refine((part) => part.entity !== undefined || part.slot_name === undefined, {
    message: 'slot_name needs an entity',
    path: ['slot_name'],
  });

const utterance = z.object({ data: z.array(sentencePart).min(1).max(100) });

const linkValue = z.object({ text: nonEmptyText(500), value: url, openInPanel: z.boolean().optional() });
const buttonValue = z.object({ text: nonEmptyText(500), value: nonEmptyText(1000) });
const eventValue = z.object({ text: nonEmptyText(500), value: symbol('event') });

const card = z.object({
  title: text(500).optional(),
  text: text(4000).optional(),
  image: url.optional(),
  links: z.array(linkValue).max(20).optional(),
  buttons: z.array(buttonValue).max(20).optional(),
  event: eventValue.optional(),
});

const responseElement = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('text'),
    text: z
      .union([nonEmptyText(4000).transform((t) => [t]), z.array(nonEmptyText(4000)).min(1).max(50)])
      .meta({ description: 'alternatives; one is chosen at random for each reply' }),
  }),
  z.object({ type: z.literal('link'), ...linkValue.shape }),
  z.object({ type: z.literal('button'), ...buttonValue.shape }),
  z.object({ type: z.literal('event'), ...eventValue.shape }),
  z.object({ type: z.literal('cards'), cards: z.array(card).min(1).max(20) }),
  z.object({
    type: z.literal('events'),
    events: z
      .array(z.object({ text: nonEmptyText(500), event: symbol('event') }))
      .min(1)
      .max(20),
  }),
  z.object({ type: z.literal('web'), web: nonEmptyText(20_000) }),
  z.object({ type: z.literal('speaker'), speaker: nonEmptyText(20_000) }),
  z.object({ type: z.literal('telephony'), telephony: nonEmptyText(20_000) }),
]);

const fulfillment = z
  .record(
    z.string().regex(CHANNEL_PATTERN, 'channel names are 1-64 letters, digits, "_" or "-"'),
    z.array(responseElement).max(50),
  )
  .meta({ description: 'channel (the Messages `platform`, or "default") -> ordered stream of elements' });

export const CONDITION_OPERATORS = [
  '==',
  '!=',
  'exists',
  'notExists',
  'contains',
  'notContains',
  '>',
  '>=',
  '<',
  '<=',
] as const;

const conditionVariable = z
  .string()
  .overwrite(composedWhenMarked)
  .regex(
    /^(?:(?:slots|context)\.)?[\p{L}\p{N}_][\p{L}\p{M}\p{N}_.-]{0,63}$/u,
    'must be slots.<name>, context.<name>, contexts, platform, query, event or a slot name',
  );
const condition = z.tuple([conditionVariable, z.enum(CONDITION_OPERATORS), z.string().max(1000)]).meta({
  description:
    '[variable, operator, value]; variables: slots.<name>, context.<name>, contexts, platform, query, event',
});

const conditionalResponse = z.object({
  default: fulfillment.optional(),
  if: z
    .array(z.object({ conditions: z.array(condition).min(1).max(20), fulfillment }))
    .max(50)
    .optional()
    .meta({ description: 'evaluated in order; the first whose conditions all hold answers' }),
});

const outputContext = z.union([
  symbol('context').transform((name) => ({ name, lifespan: undefined as number | undefined })),
  z.object({
    name: symbol('context'),
    lifespan: z.number().int().min(0).max(1000).optional().meta({ description: 'user turns; 0 clears it' }),
  }),
]);

const settings = z.object({
  placeholder: text(200).default(DEFAULT_SETTINGS.placeholder),
  disableInput: z.boolean().default(DEFAULT_SETTINGS.disableInput),
});

/** The first key of a free-form value the store cannot hold (`$…`, a `.`), or past 10 levels of nesting: its path. */
function unstorableKey(value: unknown, path: string[] = []): string[] | null {
  if (typeof value !== 'object' || value === null) return null;
  if (path.length > 10) return path;
  for (const [key, inner] of Object.entries(value)) {
    if (!Array.isArray(value) && (key.startsWith('$') || key.includes('.'))) return [...path, key];
    const found = unstorableKey(inner, [...path, key]);
    if (found) return found;
  }
  return null;
}

/** A free-form object the caller gives and the store keeps as it is: keys MongoDB (and NeDB) can hold. */
const storableObject = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const key = unstorableKey(value);
  if (key)
    ctx.addIssue({
      code: 'custom',
      path: key,
      message: 'keys may not start with $ nor hold a dot, and values nest at most 10 levels deep',
    });
});

/** Every field of an intent; on create all are optional, on update the present ones replace the stored ones. */
export const intentFields = {
  name: nonEmptyText(120),
  isWelcome: z.boolean(),
  isFallback: z.boolean(),
  endConversation: z.boolean().meta({ description: 'answering this intent ends the conversation' }),
  events: z.array(symbol('event')).max(50),
  disambiguationSentence: byLang(text(1000)),
  inputContexts: z.array(symbol('context')).max(20),
  outputContexts: byLang(z.array(outputContext).max(20)),
  utterances: byLang(z.array(utterance).max(5000)),
  parameters: byLang(z.array(storableObject).max(100)),
  conditionalResponses: byLang(conditionalResponse),
  settings: byLang(settings),
};

/** What GET answers besides the fields: accepted back (a GET, edit, POST round trip), then dropped. */
const viewOnly = (what: string) =>
  z
    .string()
    .optional()
    .meta({ description: `${what}; read-only, ignored` });
const VIEW_ONLY = {
  id: viewOnly('the id'),
  createdAt: viewOnly('when it was created'),
  updatedAt: viewOnly('when it was last changed'),
};
const withoutViewOnly = <T extends { id?: string; createdAt?: string; updatedAt?: string }>({
  id: _id,
  createdAt: _created,
  updatedAt: _updated,
  ...fields
}: T) => fields;

/** A misspelled field is refused (it would be dropped, and the intent silently left without it). */
export const intentBody = z
  .object({ ...intentFields, ...VIEW_ONLY })
  .partial()
  .strict()
  .transform(withoutViewOnly);
export type IntentInput = z.infer<typeof intentBody>;

// ---- entities (spec 2.10) -----------------------------------------------------------------------

/** a value or synonym, kept in NFC: one sent in two Unicode forms (`é`, `e\u0301`) is one value */
const entityText = z.string().trim().normalize('NFC').min(1).max(200);
const occurrence = z.object({
  value: entityText,
  synonyms: z.array(entityText).max(500).optional(),
});

export const entityFields = {
  name: symbol('entity name'),
  automaticallyExtensible: byLang(z.boolean()),
  useSynonyms: byLang(z.boolean()),
  data: byLang(z.array(occurrence).max(20_000)),
};

type EntityShape = { [K in keyof typeof entityFields]: z.infer<(typeof entityFields)[K]> };

/**
 * cross-field rules of a complete entity: flags for each language of `data`, synonyms where asked, values unique per
 * language (values that differ otherwise, `Paris` and `paris`, are each matched as typed: see the engine's gazetteer)
 */
export function checkEntity(entity: EntityShape, ctx: z.RefinementCtx): void {
  for (const [lang, values] of Object.entries(entity.data)) {
    if (entity.automaticallyExtensible[lang] === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['automaticallyExtensible', lang],
        message: `required for language ${lang}`,
      });
    if (entity.useSynonyms[lang] === undefined)
      ctx.addIssue({ code: 'custom', path: ['useSynonyms', lang], message: `required for language ${lang}` });
    const seen = new Set<string>();
    values.forEach((occ, i) => {
      if (entity.useSynonyms[lang] && occ.synonyms === undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['data', lang, i, 'synonyms'],
          message: `required because useSynonyms.${lang} is true`,
        });
      if (seen.has(occ.value))
        ctx.addIssue({
          code: 'custom',
          path: ['data', lang, i, 'value'],
          message: `duplicate value "${occ.value}"`,
        });
      seen.add(occ.value);
    });
  }
}

export const entityBody = z
  .object({ ...entityFields, ...VIEW_ONLY })
  .strict()
  .superRefine(checkEntity)
  .transform(withoutViewOnly);
export const entityPatchBody = z
  .object({ ...entityFields, ...VIEW_ONLY })
  .partial()
  .strict()
  .transform(withoutViewOnly);
export type EntityInput = z.infer<typeof entityBody>;

// ---- messages (spec 4.4) ------------------------------------------------------------------------

export const messageBody = z
  .object({
    userId: nonEmptyText(256),
    platform: nonEmptyText(64),
    // empty or blank text says nothing: it counts as absent (so `event` alone may be sent beside it)
    text: z.preprocess(
      (t) => (typeof t === 'string' && t.trim() === '' ? undefined : t),
      z.string().trim().min(1).max(4000).optional(),
    ),
    // spec 4.4: the fallback answers an event that does not exist, whatever its name; one no intent can list
    // (`__proto__`, `start over`) is such an event, not a bad request. Blank, like text, it counts as absent.
    event: z.preprocess(
      (e) => (typeof e === 'string' && e.trim() === '' ? undefined : e),
      nonEmptyText(256).optional(),
    ),
    payload: z.record(z.string(), z.unknown()).optional(),
    // blank or null, as connectors send a visitor without a locale, it counts as absent
    lang: z
      .preprocess(
        (l) => (l === null || (typeof l === 'string' && l.trim() === '') ? undefined : l),
        visitorLangCode.optional(),
      )
      .meta({
        description:
          "addition: the visitor's language (`en_US` taken as `en-US`; blank or null counts as absent); the assistant's language it finds (BCP 47 lookup: `fr-FR` finds `fr`, `pt` finds `pt-BR`, `zh-TW` finds `zh-Hant`), when absent the language the session's last message was answered in, else its default `lang`",
      }),
  })
  .refine((m) => m.text !== undefined || m.event !== undefined, {
    message: 'text or event is required',
    path: ['text'],
  })
  .refine((m) => m.text === undefined || m.event === undefined, {
    message: 'send either text or event, not both',
    path: ['event'],
  });
export type MessageInput = z.infer<typeof messageBody>;

// ---- responses (published in the OpenAPI document) ----------------------------------------------
// What the routes answer, every object open to fields added later; language-keyed maps are by code.

const instant = z.iso.datetime();
const byLangOut = <T extends z.ZodType>(value: T) => z.record(langTag, value);

/** `POST /v2/auth/signup` and `/v2/auth/login`. */
export const SessionGrantSchema = z
  .looseObject({
    userId: z.string(),
    sessionToken: z.string().meta({ description: 'send as `X-Legacy-Session-Token`' }),
  })
  .meta({ id: 'LegacySession' });

export const LoggedOutSchema = z.looseObject({ loggedOut: z.literal(true) }).meta({ id: 'LoggedOut' });

/** Spec 2.8. */
export const AccessTokenRecordSchema = z
  .looseObject({
    _id: z.string(),
    _session_token: z.string().meta({
      description: 'the access token: its value when created, only its first characters when listed',
    }),
    _p_user: z.string().meta({ description: 'the account' }),
    createdWith: z.looseObject({ action: z.string(), authProvider: z.string() }),
    restricted: z.boolean().meta({ description: 'a restricted token cannot create or revoke access tokens' }),
    expiresAt: instant,
    _created_at: instant,
    _updated_at: instant,
  })
  .meta({ id: 'LegacyAccessToken', description: 'Legacy access-token record (spec 2.8)' });

export const RevokedAccessTokenSchema = z
  .looseObject({ _id: z.string(), revoked: z.literal(true) })
  .meta({ id: 'RevokedAccessToken' });

/** What a delete of an assistant, intent or entity answers. */
export const DeletedSchema = z
  .looseObject({ id: z.string(), deleted: z.literal(true) })
  .meta({ id: 'Deleted' });

/** Spec 2.11, plus the assistant's `id`. */
export const AssistantSchema = z
  .looseObject({
    id: z.string(),
    name: z.string(),
    photo: z.looseObject({ url: z.string() }).nullable().meta({ description: 'holds `url` of the picture' }),
    developer: z.string().meta({ description: "the account's username" }),
    clientToken: z.string().meta({ description: 'calls the assistant (Messages)' }),
    developerToken: z.string().meta({ description: 'manages the assistant' }),
    lang: z.string().meta({ description: 'default language' }),
    languages: z.array(z.string()),
    description: z.string(),
    nlu: z.string().meta({ description: 'language-understanding engine name' }),
    satisfactionOption: z.boolean().nullable(),
    allowedOrigins: z
      .array(z.string())
      .meta({ description: 'addition: web origins whose pages may call Messages from a browser (CORS)' }),
  })
  .meta({ id: 'Assistant', description: 'Assistant (spec 2.11)' });

/** `GET /v1/widget/config`: what the web chat shows of an assistant, read with its client token. */
export const WidgetConfigSchema = z
  .looseObject({
    name: z.string(),
    lang: z.string().meta({ description: 'the language the chat speaks' }),
    photo: z.looseObject({ url: z.string() }).nullable(),
  })
  .meta({ id: 'WidgetConfig', description: 'the public face of an assistant, for the web chat' });

/** `GET /v1/bots`: the assistant and where the training of its language models stands. */
export const AssistantWithTrainingSchema = AssistantSchema.extend({
  training: z.looseObject({
    upToDate: z.boolean(),
    error: z.string().nullable().meta({
      description:
        'why the last training failed (too many sentences, say) while not up to date: the errors of its languages, and a change the store kept from training (saved but not yet recorded, or a training the store failed) with when it is tried again',
    }),
    revision: z.number().int().meta({ description: 'revision of the intents and entities' }),
    languages: byLangOut(
      z.looseObject({
        revision: z.number().int().meta({ description: 'the revision its current model learnt' }),
        hasModel: z.boolean(),
        trainedAt: instant.nullable(),
        trainingMs: z.number().nullable(),
        error: z.string().nullable().meta({
          description:
            'why the last training of this language was refused or failed, while its model is behind (the previous one answers; the other languages train)',
        }),
      }),
    ),
  }),
}).meta({ id: 'AssistantWithTraining' });

const sentencePartOut = z.looseObject({
  text: z.string(),
  entity: z.string().optional(),
  slot_name: z.string().optional(),
});
const linkOut = z.looseObject({ text: z.string(), value: z.string(), openInPanel: z.boolean().optional() });
const buttonOut = z.looseObject({ text: z.string(), value: z.string() });
const eventOut = z.looseObject({ text: z.string(), value: z.string() });
const eventChoiceOut = z.looseObject({ text: z.string(), event: z.string() });
const cardOut = z
  .looseObject({
    title: z.string().optional(),
    text: z.string().optional(),
    image: z.string().optional(),
    links: z.array(linkOut).optional(),
    buttons: z.array(buttonOut).optional(),
    event: eventOut.optional(),
  })
  .meta({ id: 'Card' });
const responseElementOut = z
  .discriminatedUnion('type', [
    z.looseObject({ type: z.literal('text'), text: z.array(z.string()) }),
    z.looseObject({ type: z.literal('link'), ...linkOut.shape }),
    z.looseObject({ type: z.literal('button'), ...buttonOut.shape }),
    z.looseObject({ type: z.literal('event'), ...eventOut.shape }),
    z.looseObject({ type: z.literal('cards'), cards: z.array(cardOut) }),
    z.looseObject({ type: z.literal('events'), events: z.array(eventChoiceOut) }),
    z.looseObject({ type: z.literal('web'), web: z.string() }),
    z.looseObject({ type: z.literal('speaker'), speaker: z.string() }),
    z.looseObject({ type: z.literal('telephony'), telephony: z.string() }),
  ])
  .meta({ id: 'ResponseElement' });
const fulfillmentOut = z
  .record(z.string(), z.array(responseElementOut))
  .meta({ description: 'channel -> ordered stream of response elements' });
const settingsOut = z
  .looseObject({ placeholder: z.string(), disableInput: z.boolean() })
  .meta({ id: 'IntentSettings' });

/** Spec 2.9, as stored: with `id`, text alternatives as lists, output contexts with their lifespan. */
export const IntentSchema = z
  .looseObject({
    id: z.string(),
    name: z.string(),
    isWelcome: z.boolean(),
    isFallback: z.boolean(),
    endConversation: z
      .boolean()
      .meta({ description: 'addition: answering this intent ends the conversation' }),
    events: z.array(z.string()),
    disambiguationSentence: byLangOut(z.string()),
    inputContexts: z.array(z.string()),
    outputContexts: byLangOut(z.array(z.looseObject({ name: z.string(), lifespan: z.number().int() }))),
    utterances: byLangOut(z.array(z.looseObject({ data: z.array(sentencePartOut) }))),
    parameters: byLangOut(z.array(z.record(z.string(), z.unknown()))),
    conditionalResponses: byLangOut(
      z.looseObject({
        default: fulfillmentOut.optional(),
        if: z
          .array(
            z.looseObject({
              conditions: z.array(z.tuple([z.string(), z.enum(CONDITION_OPERATORS), z.string()])),
              fulfillment: fulfillmentOut,
            }),
          )
          .optional(),
      }),
    ),
    settings: byLangOut(settingsOut).meta({
      description: 'for every language of the assistant, defaults filled',
    }),
    createdAt: instant,
    updatedAt: instant,
  })
  .meta({ id: 'Intent', description: 'Intent (spec 2.9)' });

/** Spec 2.10, with `id`. */
export const EntitySchema = z
  .looseObject({
    id: z.string(),
    name: z.string(),
    automaticallyExtensible: byLangOut(z.boolean()),
    useSynonyms: byLangOut(z.boolean()),
    data: byLangOut(z.array(z.looseObject({ value: z.string(), synonyms: z.array(z.string()).optional() }))),
    createdAt: instant,
    updatedAt: instant,
  })
  .meta({ id: 'Entity', description: 'Entity (spec 2.10)' });

/** Spec 2.12 "Item": what a response element becomes in a reply. */
export const ReplyItemSchema = z
  .looseObject({
    text: z.string().optional(),
    web: z.string().optional(),
    speaker: z.string().optional(),
    telephony: z.string().optional(),
    links: linkOut.optional(),
    button: buttonOut.optional(),
    event: eventOut.optional(),
    cards: z.array(cardOut).optional(),
    events: z.array(eventChoiceOut).optional(),
  })
  .meta({ id: 'ReplyItem' });

/** Spec 2.12 "Intent result", plus the entities behind the slots and the intent's settings. */
export const IntentResultSchema = z
  .looseObject({
    source: z.string(),
    name: z.string(),
    confidence: z.number().min(0).max(1),
    isFallback: z.boolean(),
    endConversation: z.boolean(),
    slots: z.record(z.string(), z.string()).meta({ description: 'slot name -> detected value' }),
    entities: z
      .array(
        z.looseObject({
          entity: z.string(),
          slot: z.string(),
          value: z.string().meta({ description: 'canonical value' }),
          text: z.string().meta({ description: 'as the user typed it' }),
          start: z.number().int(),
          end: z.number().int(),
          confidence: z.number().min(0).max(1),
        }),
      )
      .meta({ description: 'addition: what was detected behind each slot' }),
    settings: settingsOut.meta({ description: "addition: the intent's connector settings" }),
  })
  .meta({ id: 'IntentResult' });

/** Spec 2.12 reply of `POST /v1/Messages`. */
export const MessageReplySchema = z
  .looseObject({
    id: z.string(),
    timestamp: instant,
    sessionId: z.string(),
    conversationId: z.string(),
    lang: z.string().meta({
      description:
        "addition: the assistant's language that answered: the request's `lang` looked up (BCP 47, `fr-FR` finds `fr`), else its default",
    }),
    query: z
      .string()
      .optional()
      .meta({ description: 'the text received; present when the request had `text`' }),
    fulfillment: z.array(z.looseObject({ source: z.string(), items: z.array(ReplyItemSchema) })),
    intents: z.array(IntentResultSchema),
    status: z.looseObject({ code: z.literal(200), errorType: z.literal('success') }),
  })
  .meta({ id: 'MessageReply', description: 'Messages reply (spec 2.12)' });
