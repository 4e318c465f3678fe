import { randomUUID } from 'node:crypto';
import { DuplicateKeyError } from '@platform/store';
import type { ConversationContext, ConversationDoc } from '../persistence/collections';
import type { LegacyContext } from './context';
import { newId } from './ids';
import type { OutputContext } from './model-types';

/**
 * One user's conversation with one assistant. A session lasts while the user keeps talking (it ends
 * after LEGACY_CONVERSATION_IDLE_SECONDS of silence); a conversation ends earlier when an intent
 * flagged `endConversation` answers. Either way the next message starts afresh: new conversation id,
 * no contexts, no remembered slots.
 */
/** A conversation as read for one message; `stored` is false for one this message starts. */
export interface Conversation {
  doc: ConversationDoc;
  stored: boolean;
  /** the stored document as read (an idle one too), over which alone the turn is written; null when there was none */
  read: ConversationDoc | null;
}

/** What a turn leaves in its conversation. */
export interface TurnRecord {
  outputContexts: OutputContext[];
  slots: Record<string, string>;
  /** the language it was answered in */
  lang: string;
  /** its intent ends the conversation */
  ended: boolean;
}

export class Conversations {
  constructor(private readonly ctx: LegacyContext) {}

  /** The conversation the message continues, or a new one. */
  async current(assistantId: string, userId: string): Promise<Conversation> {
    const now = this.ctx.clock.now();
    const stored = await this.ctx.cols.conversations.findOne({ _id: conversationKey(assistantId, userId) });
    if (stored && now.getTime() - stored.lastActivityAt.getTime() <= this.idleMs())
      return { doc: { ...stored, slots: slotsFromStore(stored.slots) }, stored: true, read: stored };
    return {
      read: stored,
      doc: {
        _id: conversationKey(assistantId, userId),
        assistantId,
        userId,
        sessionId: newId(),
        conversationId: newId(),
        contexts: [],
        slots: {},
        startedAt: now,
        lastActivityAt: now,
      },
      stored: false,
    };
  }

  /**
   * Records a turn: every active context loses one turn of life, then the answering intent's output
   * contexts are set (lifespan 0 clears one), and the language it was answered in kept for the next. An ended
   * conversation keeps its session and language but forgets the rest.
   * A turn that changes nothing but the time is not written unless the stored time is getting old
   * (a tenth of the idle time, at most a minute): busy conversations cost no write per message.
   * The turn is written only over the conversation it was answered from: false when another turn (on another
   * instance) wrote it meanwhile, and this one must be answered again from what that one left. Written over, the other
   * turn's contexts, slots, language or end would be lost. A turn not written (nothing changed) comes before the other.
   */
  async recordTurn({ doc, stored, read }: Conversation, turn: TurnRecord): Promise<boolean> {
    const now = this.ctx.clock.now();
    const next: Pick<ConversationDoc, 'conversationId' | 'contexts' | 'slots' | 'startedAt'> = turn.ended
      ? { conversationId: newId(), contexts: [], slots: {}, startedAt: now }
      : {
          conversationId: doc.conversationId,
          contexts: advanceContexts(doc.contexts, turn.outputContexts),
          slots: { ...doc.slots, ...turn.slots },
          startedAt: doc.startedAt,
        };
    const unchanged =
      stored &&
      turn.lang === doc.lang &&
      next.conversationId === doc.conversationId &&
      sameContexts(next.contexts, doc.contexts) &&
      sameSlots(next.slots, doc.slots) &&
      now.getTime() - doc.lastActivityAt.getTime() < Math.min(60_000, this.idleMs() / 10);
    if (unchanged) return true;
    try {
      const { matched } = await this.ctx.cols.conversations.updateOne(
        // one stored before revisions has none
        { _id: doc._id, revision: read?.revision ?? { $exists: false } },
        {
          $set: {
            assistantId: doc.assistantId,
            userId: doc.userId,
            sessionId: doc.sessionId,
            ...next,
            slots: slotsForStore(next.slots),
            lang: turn.lang,
            lastActivityAt: now,
            expiresAt: new Date(now.getTime() + this.idleMs()),
            revision: randomUUID(),
          },
        },
        // none was read: made, unless another turn made it meanwhile (the insert meets it)
        { upsert: read === null },
      );
      if (matched === 0 && read !== null) return false;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
    // the assistant deleted meanwhile removed its conversations before this write: this one goes too
    if (!(await this.ctx.cols.assistants.findOne({ _id: doc.assistantId })))
      await this.ctx.cols.conversations.deleteOne({ _id: doc._id });
    return true;
  }

  private idleMs(): number {
    return this.ctx.config.LEGACY_CONVERSATION_IDLE_SECONDS * 1000;
  }
}

/**
 * A slot's name as a key of the stored conversation. Names come from entities, `slot_name`s and parameters' `name`s,
 * and may hold a dot or start with `$`, which the store refuses in a key (every message filling such a slot answered
 * 500): those, and `%`, are written `%XX`. Other names are kept as they are, as they were stored before.
 */
const storedSlotKey = (name: string): string =>
  name.replace(/%|\.|^\$/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const slotNameOf = (key: string): string =>
  key.replace(/%(25|2E|24)/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

/** The slots of a conversation as it is stored. */
export function slotsForStore(slots: Record<string, string>): Record<string, string> {
  const stored: Record<string, string> = {};
  for (const [name, value] of Object.entries(slots)) stored[storedSlotKey(name)] = value;
  return stored;
}

/** The slots of a stored conversation. */
export function slotsFromStore(stored: Record<string, string> | undefined): Record<string, string> {
  const slots: Record<string, string> = {};
  for (const [key, value] of Object.entries(stored ?? {})) {
    const name = slotNameOf(key);
    // a name that would set the object's prototype holds no slot (refused as a name since)
    if (name !== '__proto__') slots[name] = value;
  }
  return slots;
}

const sameContexts = (a: ConversationContext[], b: ConversationContext[]) =>
  a.length === b.length && a.every((c, i) => c.name === b[i]!.name && c.lifespan === b[i]!.lifespan);

function sameSlots(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

export const conversationKey = (assistantId: string, userId: string) => `${assistantId}:${userId}`;

export function advanceContexts(
  active: ConversationContext[],
  outputs: OutputContext[],
): ConversationContext[] {
  const next = new Map<string, number>();
  for (const context of active) if (context.lifespan > 1) next.set(context.name, context.lifespan - 1);
  for (const output of outputs) {
    if (output.lifespan > 0) next.set(output.name, output.lifespan);
    else next.delete(output.name);
  }
  return [...next].map(([name, lifespan]) => ({ name, lifespan }));
}
