import type { SerializedModel } from '@platform/nlu';
import type {
  NluEngine,
  NluEntityMatch,
  NluModel,
  NluParse,
  NluTrainingSet,
} from '../../src/domain/understanding';

/**
 * A small, predictable NLU engine for tests of the service's own rules (retraining, contexts, slots,
 * responses): an intent scores the best word overlap of the text with one of its sentences; entities are
 * found by their values and synonyms. Training can be held (`hold()`) to observe what answers meanwhile.
 */
export class ScriptedNlu implements NluEngine {
  trainings: NluTrainingSet[] = [];
  /** trainings begun, held ones included */
  started = 0;
  private gate: Promise<void> | null = null;
  private openGate: (() => void) | null = null;

  hold(): void {
    this.gate = new Promise((resolve) => {
      this.openGate = resolve;
    });
  }

  release(): void {
    this.openGate?.();
    this.gate = null;
  }

  trainModel(set: NluTrainingSet): NluModel {
    this.trainings.push(set);
    return new ScriptedModel(set);
  }

  async trainModelInWorker(set: NluTrainingSet): Promise<NluModel> {
    this.started++;
    if (this.gate) await this.gate;
    return this.trainModel(set);
  }

  async storedModelForm(model: NluModel): Promise<Uint8Array> {
    return Buffer.from(JSON.stringify(model.toJSON()));
  }

  async loadStoredModel(bytes: Uint8Array): Promise<NluModel> {
    return new ScriptedModel((JSON.parse(Buffer.from(bytes).toString()) as { set: NluTrainingSet }).set);
  }
}

const words = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

class ScriptedModel implements NluModel {
  readonly lang: string;
  constructor(private readonly set: NluTrainingSet) {
    this.lang = set.lang;
  }

  toJSON(): SerializedModel {
    return { set: this.set } as unknown as SerializedModel;
  }

  parse(text: string): NluParse {
    const said = new Set(words(text));
    const intents = this.set.intents
      .map((intent) => {
        let best = 0;
        for (const utterance of intent.utterances) {
          const sentence = new Set(words(utterance.map((p) => p.text).join(' ')));
          const shared = [...sentence].filter((w) => said.has(w)).length;
          best = Math.max(best, shared / new Set([...sentence, ...said]).size);
        }
        return { id: intent.id, name: intent.name, confidence: best };
      })
      .sort((a, b) => b.confidence - a.confidence);
    const entities: NluEntityMatch[] = [];
    const lower = text.toLowerCase();
    for (const entity of this.set.entities) {
      for (const occ of entity.values) {
        for (const form of [occ.value, ...occ.synonyms]) {
          const start = lower.indexOf(form.toLowerCase());
          if (start < 0) continue;
          const slot =
            this.set.intents.flatMap((i) => i.utterances.flat()).find((p) => p.entity === entity.name)
              ?.slot_name ?? entity.name;
          entities.push({
            entity: entity.name,
            slot,
            value: occ.value,
            text: text.slice(start, start + form.length),
            start,
            end: start + form.length,
            confidence: 1,
          });
          break;
        }
      }
    }
    return { intents, entities };
  }
}
