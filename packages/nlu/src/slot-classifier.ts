/**
 * Slot of an entity occurrence, learnt from the tagged parts: when an entity fills several slots (e.g. a city as
 * `departure` or `arrival`), a small multinomial logistic regression per entity over the words around the span
 * (±3 tokens, by relative position and as a bag on each side; other entity occurrences seen as "@entity") picks it.
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

export function slotContextFeatures(words: readonly string[], start: number, end: number): string[] {
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
}

export class SlotClassifier {
  private constructor(private readonly perEntity: ReadonlyArray<EntitySlots | null>) {}

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
        for (const f of new Set(slotContextFeatures(ex.words, ex.start, ex.end))) {
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
    return new SlotClassifier(perEntity);
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
    const strings = new Set(slotContextFeatures(words, start, end));
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
    );
  }
}
