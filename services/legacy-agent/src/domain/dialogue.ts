import { Conflict, InvalidInput } from '@platform/kernel';
import type { MessageResult } from '../metrics';
import type { AssistantDoc, IntentDoc } from '../persistence/collections';
import type { MessageInput } from '../routes/schemas';
import { builtinFallbackText } from './builtin-fallback';
import type { LegacyContext } from './context';
import { type Conversation, type Conversations, conversationKey, type TurnRecord } from './conversations';
import { newId } from './ids';
import { lookupLanguage } from './language-tags';
import { DEFAULT_SETTINGS, type IntentSettings, type ReplyItem } from './model-types';
import { chooseStream, renderItems, type TurnVariables } from './responses';
import type { NluEntityMatch, NluParse, Understanding } from './understanding';

/** The event that triggers the welcome intent (besides any intent listing it in `events`). */
export const WELCOME_EVENT = 'WELCOME';
export const BUILTIN_FALLBACK_NAME = 'Default Fallback Intent';
/** how many times a message is answered before it gives up to other messages of its conversation (409) */
const TURN_ATTEMPTS = 10;

/** Spec 2.12 "Intent result", plus the entities behind the slots and the intent's settings. */
export interface IntentResult {
  source: string;
  name: string;
  confidence: number;
  isFallback: boolean;
  endConversation: boolean;
  slots: Record<string, string>;
  entities: Array<Omit<NluEntityMatch, 'slot'> & { slot: string }>;
  settings: IntentSettings;
}

/** Spec 2.12 reply. */
export interface MessageReply {
  id: string;
  timestamp: string;
  sessionId: string;
  conversationId: string;
  /**
   * addition: the assistant's language that answered (the request's `lang` looked up, else the one the session's last
   * message was answered in, else its default)
   */
  lang: string;
  query?: string;
  fulfillment: Array<{ source: string; items: ReplyItem[] }>;
  intents: IntentResult[];
  status: { code: 200; errorType: 'success' };
}

/** One message answered: the reply, what it leaves in the conversation, and how it is counted. */
interface Turn {
  reply: MessageReply;
  record: TurnRecord;
  outcome: MessageResult;
}

interface Match {
  intent: IntentDoc | null;
  confidence: number;
  parse: NluParse;
  /** there was no model to classify the text with (none trained yet in time) */
  noModel?: boolean;
}

interface CachedIntents {
  revision: number;
  intents: IntentDoc[];
  byId: Map<string, IntentDoc>;
}

/** event names match in any letter case and Unicode form */
const sameEvent = (a: string, b: string) =>
  a.normalize('NFC').toLowerCase() === b.normalize('NFC').toLowerCase();
const eligible = (intent: IntentDoc, contexts: ReadonlySet<string>) =>
  intent.inputContexts.every((name) => contexts.has(name));

/** `/v1/Messages`: understand what the user says and answer with the matched intent's replies. */
export class Dialogue {
  /** intents by assistant, reloaded when the assistant's data revision moves */
  private readonly intentCache = new Map<string, CachedIntents>();
  /** by conversation, the last of its turns under way in this process (settled, never rejected) */
  private readonly turns = new Map<string, Promise<unknown>>();

  constructor(
    private readonly ctx: LegacyContext,
    private readonly understanding: Understanding,
    private readonly conversations: Conversations,
  ) {}

  forget(assistantId: string): void {
    this.intentCache.delete(assistantId);
  }

  /**
   * A user's messages are answered one after another, each from the conversation the one before left: answered at
   * once, each would read the same conversation and write it back with its own turn only, losing the others' contexts
   * and slots (a connector delivering a burst of messages).
   */
  async reply(assistant: AssistantDoc, input: MessageInput): Promise<MessageReply> {
    const key = conversationKey(assistant._id, input.userId);
    // the wait for a first model counts from the message's arrival, not from its turn: a burst waits it once
    const modelDeadline = Date.now() + this.ctx.config.LEGACY_FIRST_MODEL_WAIT_MS;
    const turn = (this.turns.get(key) ?? Promise.resolve()).then(() =>
      this.answer(assistant, input, modelDeadline),
    );
    const settled = turn.catch(() => undefined);
    this.turns.set(key, settled);
    try {
      return await turn;
    } finally {
      if (this.turns.get(key) === settled) this.turns.delete(key);
    }
  }

  private async answer(
    assistant: AssistantDoc,
    input: MessageInput,
    modelDeadline: number,
  ): Promise<MessageReply> {
    const asked = input.lang === undefined ? undefined : lookupLanguage(input.lang, assistant);
    if (input.lang !== undefined && asked === undefined) {
      const spoken = assistant.languages.join(', ');
      throw new InvalidInput(`The assistant does not speak ${input.lang}; it speaks ${spoken}`, {
        details: { issues: [{ field: 'lang', message: `must name a language of the assistant: ${spoken}` }] },
      });
    }
    // Another instance may answer a message of the same conversation meanwhile (a burst spread over instances): a turn
    // written over the conversation that one left would lose its contexts, slots, language or end, so this one is
    // answered again from it. A try is lost only to a turn that went in: a few are enough for a burst.
    for (let attempt = 1; ; attempt++) {
      const [known, conversation] = await Promise.all([
        this.intentsOf(assistant),
        this.conversations.current(assistant._id, input.userId),
      ]);
      const turn = await this.turn(assistant, input, asked, known, conversation, modelDeadline);
      if (await this.conversations.recordTurn(conversation, turn.record)) {
        this.ctx.metrics.message(turn.outcome);
        return turn.reply;
      }
      if (attempt === TURN_ATTEMPTS)
        throw new Conflict('Other messages of this conversation kept changing it meanwhile; send it again', {
          error: 'ConcurrentUpdate',
          retryable: true,
        });
    }
  }

  /** The reply to one message in `conversation`, and what it leaves there. */
  private async turn(
    assistant: AssistantDoc,
    input: MessageInput,
    asked: string | undefined,
    known: CachedIntents,
    conversation: Conversation,
    modelDeadline: number,
  ): Promise<Turn> {
    // a message that does not say its language continues in its session's, else the assistant's default
    const kept = conversation.doc.lang;
    const lang = asked ?? (kept !== undefined && assistant.languages.includes(kept) ? kept : assistant.lang);
    const active = new Set(conversation.doc.contexts.filter((c) => c.lifespan > 0).map((c) => c.name));
    const match =
      input.event !== undefined
        ? matchEvent(known.intents, input.event, active)
        : await this.matchText(assistant, lang, known, input.text ?? '', active, modelDeadline);
    const intent = match.intent ?? fallbackIntent(known.intents, active);
    const isFallback = intent === null || intent.isFallback;
    const confidence = match.intent ? match.confidence : 1;
    const slots = slotsOf(intent, lang, match.parse.entities);
    const vars: TurnVariables = {
      slots: { ...conversation.doc.slots, ...slots.values },
      contexts: [...active],
      platform: input.platform,
      query: input.text,
      event: input.event,
    };
    const items: ReplyItem[] = intent
      ? renderItems(chooseStream(intent.conditionalResponses[lang], vars), this.ctx.random)
      : [{ text: builtinFallbackText(lang, this.ctx.config.LEGACY_BUILTIN_FALLBACK_TEXT) }];
    const ended = intent?.endConversation ?? false;
    const reply: MessageReply = {
      id: newId(),
      timestamp: this.ctx.clock.now().toISOString(),
      sessionId: conversation.doc.sessionId,
      conversationId: conversation.doc.conversationId,
      lang,
      ...(input.text !== undefined ? { query: input.text } : {}),
      fulfillment: [{ source: assistant.name, items }],
      intents: [
        {
          source: assistant.name,
          name: intent?.name ?? BUILTIN_FALLBACK_NAME,
          confidence: round(confidence),
          isFallback,
          endConversation: ended,
          slots: slots.values,
          entities: slots.details,
          settings: { ...DEFAULT_SETTINGS, ...intent?.settings[lang] },
        },
      ],
      status: { code: 200, errorType: 'success' },
    };
    return {
      reply,
      record: { outputContexts: intent?.outputContexts[lang] ?? [], slots: slots.values, lang, ended },
      outcome: isFallback ? (match.noModel ? 'no_model' : 'fallback') : 'answered',
    };
  }

  /**
   * The classifier's ranking, restricted to intents whose input contexts are all active. An intent that
   * needs a context, when that context is active and the intent clears the threshold, is preferred.
   */
  private async matchText(
    assistant: AssistantDoc,
    lang: string,
    known: CachedIntents,
    text: string,
    active: ReadonlySet<string>,
    modelDeadline: number,
  ): Promise<Match> {
    const model = await this.understanding.modelFor(assistant, lang, modelDeadline);
    if (!model) return { intent: null, confidence: 0, parse: EMPTY_PARSE, noModel: true };
    const parse: NluParse = model.parse(text);
    const threshold = this.ctx.config.LEGACY_NLU_THRESHOLD;
    // The engine ranks best first. The first eligible intent answers, unless an intent that needs an
    // active context also clears the threshold; one allocation-free pass (this runs for every message).
    let best: IntentDoc | null = null;
    let bestConfidence = 0;
    for (const score of parse.intents) {
      if (score.confidence < threshold && best) break;
      const intent = known.byId.get(score.id);
      if (!intent || !eligible(intent, active)) continue;
      if (!best) {
        best = intent;
        bestConfidence = score.confidence;
        if (intent.inputContexts.length > 0 || score.confidence < threshold) break;
      } else if (intent.inputContexts.length > 0) {
        best = intent;
        bestConfidence = score.confidence;
        break;
      }
    }
    if (!best || bestConfidence < threshold) return { intent: null, confidence: bestConfidence, parse };
    return { intent: best, confidence: bestConfidence, parse };
  }

  private async intentsOf(assistant: AssistantDoc): Promise<CachedIntents> {
    const cached = this.intentCache.get(assistant._id);
    if (cached && cached.revision === assistant.dataRevision) return cached;
    const intents = await this.ctx.cols.intents.find(
      { assistantId: assistant._id },
      { sort: { createdAt: 1, _id: 1 } },
    );
    const fresh = {
      revision: assistant.dataRevision,
      intents,
      byId: new Map(intents.map((i) => [i._id, i])),
    };
    this.intentCache.delete(assistant._id);
    this.intentCache.set(assistant._id, fresh);
    while (this.intentCache.size > this.ctx.config.LEGACY_MODEL_CACHE_SIZE)
      this.intentCache.delete(this.intentCache.keys().next().value as string);
    return fresh;
  }
}

const EMPTY_PARSE: NluParse = { intents: [], entities: [] };
const round = (n: number) => Math.round(Math.min(1, Math.max(0, n)) * 10_000) / 10_000;

/** Intents listing the event (any letter case), or the welcome intents for WELCOME; the most specific wins. */
export function matchEvent(intents: IntentDoc[], event: string, active: ReadonlySet<string>): Match {
  const candidates = intents.filter(
    (intent) =>
      (intent.events.some((e) => sameEvent(e, event)) ||
        (intent.isWelcome && sameEvent(event, WELCOME_EVENT))) &&
      eligible(intent, active),
  );
  const best = mostSpecific(candidates);
  return { intent: best, confidence: best ? 1 : 0, parse: EMPTY_PARSE };
}

/** The assistant's fallback intent for the active contexts; null means the built-in fallback answers. */
export function fallbackIntent(intents: IntentDoc[], active: ReadonlySet<string>): IntentDoc | null {
  return mostSpecific(intents.filter((intent) => intent.isFallback && eligible(intent, active)));
}

/** The candidate needing the most input contexts (all active), the first created among equals. */
function mostSpecific(candidates: IntentDoc[]): IntentDoc | null {
  let best: IntentDoc | null = null;
  for (const c of candidates) if (!best || c.inputContexts.length > best.inputContexts.length) best = c;
  return best;
}

/**
 * Slots by slot name: an entity the model tied to one of the intent's slots keeps that slot; otherwise
 * it takes the intent's next unused slot for that entity, or the entity's own name. The first value of
 * a slot wins.
 */
export function slotsOf(intent: IntentDoc | null, lang: string, entities: NluEntityMatch[]) {
  const slotsByEntity = new Map<string, string[]>();
  const add = (entity: string, slot: string) => {
    const slots = slotsByEntity.get(entity) ?? [];
    if (!slots.includes(slot)) slots.push(slot);
    slotsByEntity.set(entity, slots);
  };
  for (const u of intent?.utterances[lang] ?? [])
    for (const part of u.data) if (part.entity) add(part.entity, part.slot_name ?? part.entity);
  for (const p of intent?.parameters[lang] ?? [])
    if (typeof p.entity === 'string') add(p.entity, typeof p.name === 'string' ? p.name : p.entity);

  const values: Record<string, string> = {};
  // own slots only: a slot named `constructor` or `toString` is not filled already by Object.prototype
  const filled = (slot: string) => Object.hasOwn(values, slot);
  const details: IntentResult['entities'] = [];
  for (const match of [...entities].sort((a, b) => a.start - b.start)) {
    const candidates = slotsByEntity.get(match.entity) ?? [];
    const slot = candidates.includes(match.slot)
      ? match.slot
      : (candidates.find((s) => !filled(s)) ?? candidates[0] ?? match.entity);
    // `__proto__` (refused as a name since; an intent stored before may still have it) would set the prototype
    if (!filled(slot) && slot !== '__proto__') values[slot] = match.value;
    details.push({ ...match, slot });
  }
  return { values, details };
}
