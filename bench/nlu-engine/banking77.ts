/**
 * BANKING77 (Casanueva et al. 2020; CC BY 4.0, PolyAI-LDN/task-specific-datasets): 77 fine-grained banking
 * intents, 10,003 training and 3,080 test sentences. Loading, conversion to the engine's training set, and the
 * out-of-scope split used to measure rejection: a fixed list of intents left out of training, whose test sentences
 * must get the fallback (as in Banking77-OOS, Zhang et al. 2021).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { NluTrainingSet } from '../../packages/nlu/src';

export interface LabelledSentence {
  text: string;
  intent: string;
}

export interface Banking77 {
  intents: string[];
  train: LabelledSentence[];
  test: LabelledSentence[];
}

/** Default location: <workspace>/../shared/data/nlu/banking77 (override with NLU_BANKING77_DIR). */
export function defaultBanking77Dir(): string {
  if (process.env.NLU_BANKING77_DIR) return process.env.NLU_BANKING77_DIR;
  // beside the workspace, or beside its parent (a git worktree under <root>/wt/<name>)
  const near = path.resolve(__dirname, '../../../shared/data/nlu/banking77');
  return fs.existsSync(near) ? near : path.resolve(__dirname, '../../../../shared/data/nlu/banking77');
}

/** RFC 4180 CSV with a header line `text,category` (quoted fields may hold commas and doubled quotes). */
export function parseCsv(text: string): LabelledSentence[] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      field = '';
      rows.push(row);
      row = [];
    } else field += c;
  }
  if (field || row.length > 0) rows.push([...row, field]);
  const [header, ...body] = rows;
  if (header?.[0] !== 'text' || header[1] !== 'category') throw new Error('BANKING77: unexpected CSV header');
  return body
    .filter((r) => r.length >= 2 && r[0])
    .map(([text, intent]) => ({ text: text!, intent: intent! }));
}

export function loadBanking77(dir: string = defaultBanking77Dir()): Banking77 {
  const intents = JSON.parse(fs.readFileSync(path.join(dir, 'categories.json'), 'utf8')) as string[];
  return {
    intents,
    train: parseCsv(fs.readFileSync(path.join(dir, 'train.csv'), 'utf8')),
    test: parseCsv(fs.readFileSync(path.join(dir, 'test.csv'), 'utf8')),
  };
}

/**
 * The intents left out of training for the out-of-scope figures: every 8th of the 77 in `categories.json` order
 * starting from the 4th (10 intents), a fixed choice so that runs compare.
 */
export function outOfScopeIntents(data: Banking77): string[] {
  return data.intents.filter((_, i) => i % 8 === 3).slice(0, 10);
}

/** Training set of the given sentences, one intent per label (ids are the names), no entities. */
export function toTrainingSet(sentences: readonly LabelledSentence[], lang = 'en'): NluTrainingSet {
  const byIntent = new Map<string, LabelledSentence[]>();
  for (const s of sentences) byIntent.set(s.intent, [...(byIntent.get(s.intent) ?? []), s]);
  return {
    lang,
    intents: [...byIntent].map(([name, list]) => ({
      id: name,
      name,
      utterances: list.map((s) => [{ text: s.text }]),
    })),
    entities: [],
  };
}

/** Expected calibration error over `bins` equal-width confidence bins (weighted by the bins' sizes). */
export function expectedCalibrationError(
  predictions: ReadonlyArray<{ confidence: number; correct: boolean }>,
  bins = 10,
): number {
  const n = new Array<number>(bins).fill(0);
  const conf = new Array<number>(bins).fill(0);
  const acc = new Array<number>(bins).fill(0);
  for (const p of predictions) {
    const b = Math.min(bins - 1, Math.floor(p.confidence * bins));
    n[b]!++;
    conf[b]! += p.confidence;
    acc[b]! += p.correct ? 1 : 0;
  }
  let ece = 0;
  for (let b = 0; b < bins; b++) if (n[b]! > 0) ece += Math.abs(acc[b]! - conf[b]!) / predictions.length;
  return ece;
}
