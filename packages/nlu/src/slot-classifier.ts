/**
 * Slot of an entity occurrence, learnt from the tagged parts: when an entity fills several slots (e.g. a city as
 * `departure` or `arrival`), a small multinomial logistic regression per entity over the words around the span
 * (±3 tokens, by relative position and as a bag on each side) picks it.
 *
 * The slot follows the occurrence's own context words, whatever the order of the occurrences: the window stops at
 * the next entity occurrence on each side (an adjacent one is a feature, "@entity"), and the sentence's ends are
 * not features. Otherwise, when the training sentences always put the slots in one order ("from X to Y"), the
 * classifier learns the order instead of the cue words: a "to" beyond the other city, an "@city" on the left or the
 * end of the sentence all meant `to`, and "to London from Berlin" filled `to` twice (decision 0092). Models trained
 * before (`context` absent) keep the window they were trained with, which crossed other occurrences.
 */
import { decodeFloat32, decodeFloat32Array, encodeFloat32, roundToFloat32 } from './float-codec';
import { SoftmaxRegression, SparseVector } from './intent-classifier';

export interface SlotExample {
  /** the words of the utterance, with the tokens of other entity occurrences replaced by "@<entity>" */
  words: readonly string[];
  start: number;
  end: number;
  slot: string;
}

const WINDOW = 3;

/** The context window: `segment` (see above), or `crossing` (models trained before it; sentence ends included). */
export type SlotContext = 'crossing' | 'segment';

/** Another entity occurrence, as the extractor marks it ("@<entity>"; tokens never start with "@"). */
const isOccurrence = (w: string): boolean => w.charCodeAt(0) === 64;

export function slotContextFeatures(
  words: readonly string[],
  start: number,
  end: number,
  context: SlotContext,
): string[] {
  if (context === 'crossing') return crossingFeatures(words, start, end);
  const f = ['b'];
  for (let k = 1; k <= WINDOW && start - k >= 0; k++) {
    const l = words[start - k]!;
    if (isOccurrence(l) && k > 1) break;
    f.push(`L${k}:${l}`, `Lb:${l}`);
    if (isOccurrence(l)) break;
  }
  for (let k = 1; k <= WINDOW && end - 1 + k < words.length; k++) {
    const r = words[end - 1 + k]!;
    if (isOccurrence(r) && k > 1) break;
    f.push(`R${k}:${r}`, `Rb:${r}`);
    if (isOccurrence(r)) break;
  }
  return f;
}

/** The window of models trained before `segment`: ±3 words across other occurrences, sentence ends as words. */
function crossingFeatures(words: readonly string[], start: number, end: number): string[] {
  const f = ['b'];
  for (let k = 1; k <= WINDOW; k++) {
    const l = start - k >= 0 ? words[start - k]! : k === 1 ? '<s>' : null;
    const r = end - 1 + k < words.length ? words[end - 1 + k]! : k === 1 ? '</s>' : null;
    if (l !== null) f.push(`L${k}:${l}`, `Lb:${l}`);
    if (r !== null) f.push(`R${k}:${r}`, `Rb:${r}`);
  }
  return f;
}

interface EntitySlots {
  slots: string[];
  features: Map<string, number>;
  model: SoftmaxRegression | null;
}

export interface SerializedSlotClassifier {
  entities: Array<{ slots: string[]; features: string[]; weights: string; bias: string } | null>;
  /** absent in models trained before the window stopped at other occurrences: `crossing` */
  context?: SlotContext;
}

export class SlotClassifier {
  private constructor(
    private readonly perEntity: ReadonlyArray<EntitySlots | null>,
    private readonly context: SlotContext,
  ) {}

  /** `examples[e]` = the tagged occurrences of entity e */
  static train(examples: ReadonlyArray<readonly SlotExample[]>, seed: number): SlotClassifier {
    const perEntity = examples.map((list): EntitySlots | null => {
      const slots: string[] = [];
      for (const ex of list) if (!slots.includes(ex.slot)) slots.push(ex.slot);
      if (slots.length === 0) return null;
      const features = new Map<string, number>();
      if (slots.length === 1) return { slots, features, model: null };
      const xs: SparseVector[] = list.map((ex) => {
        const ids = new Set<number>();
        for (const f of new Set(slotContextFeatures(ex.words, ex.start, ex.end, 'segment'))) {
          let id = features.get(f);
          if (id === undefined) {
            id = features.size;
            features.set(f, id);
          }
          ids.add(id);
        }
        const idx = Int32Array.from([...ids].sort((a, b) => a - b));
        const val = new Float64Array(idx.length).fill(1 / Math.sqrt(idx.length));
        return { idx, val };
      });
      const model = SoftmaxRegression.train(
        xs,
        list.map((ex) => slots.indexOf(ex.slot)),
        features.size,
        slots.length,
        {
          lambda: 1e-4,
          epochs: Math.max(10, Math.min(100, Math.ceil(5000 / xs.length))),
          learningRate: 0.5,
          seed,
          classBalance: 0,
        },
      );
      roundToFloat32(model.bias);
      return { slots, features, model };
    });
    return new SlotClassifier(perEntity, 'segment');
  }

  /** Slot of an occurrence of entity `entity` at [start, end) of `words`, or null when the entity has no slot. */
  predict(
    entity: number,
    words: readonly string[],
    start: number,
    end: number,
  ): { slot: string; confidence: number } | null {
    const e = this.perEntity[entity];
    if (!e) return null;
    if (!e.model) return { slot: e.slots[0]!, confidence: 1 };
    const strings = new Set(slotContextFeatures(words, start, end, this.context));
    const ids: number[] = [];
    for (const f of strings) {
      const id = e.features.get(f);
      if (id !== undefined) ids.push(id);
    }
    const idx = Int32Array.from(ids.sort((a, b) => a - b));
    // unknown context words dilute the known ones, as they would have in training
    const val = new Float64Array(idx.length).fill(1 / Math.sqrt(strings.size));
    const p = SoftmaxRegression.softmaxInPlace(e.model.logits({ idx, val }));
    let best = 0;
    for (let c = 1; c < p.length; c++) if (p[c]! > p[best]!) best = c;
    return { slot: e.slots[best]!, confidence: p[best]! };
  }

  toJSON(): SerializedSlotClassifier {
    return {
      entities: this.perEntity.map((e) =>
        e
          ? {
              slots: e.slots,
              features: [...e.features.keys()],
              weights: e.model ? encodeFloat32(e.model.weights) : '',
              bias: e.model ? encodeFloat32(e.model.bias) : '',
            }
          : null,
      ),
      ...(this.context === 'crossing' ? {} : { context: this.context }),
    };
  }

  static fromJSON(json: SerializedSlotClassifier): SlotClassifier {
    return new SlotClassifier(
      json.entities.map((e) => {
        if (!e) return null;
        const features = new Map(e.features.map((f, i) => [f, i] as const));
        const model =
          e.slots.length > 1
            ? new SoftmaxRegression(
                e.features.length,
                e.slots.length,
                decodeFloat32Array(e.weights),
                decodeFloat32(e.bias),
              )
            : null;
        return { slots: e.slots, features, model };
      }),
      json.context ?? 'crossing',
    );
  }
}
