import type { IncomingMessage } from 'node:http';
import { InvalidInput, PayloadTooLarge } from '@platform/kernel';
import type { Request, RequestHandler, Router } from 'express';
import { AUDIO_FORMATS, audioDuration, believable } from '../audio/duration';
import type { CatalogueModel } from '../catalogue/catalogue';
import {
  account,
  failedOn,
  type GatewayContext,
  modelChoiceHeaders,
  type Outcome,
  prepareInference,
} from '../inference/gateway-context';
import { abortOnClose, requestIdOf } from './client-abort';
import { noMediaEndpoint } from './images';
import { mediaFigures } from './media-figures';
import { callPrepared } from './prepared-call';
import { mountSpeech } from './speech';

export const TRANSCRIPTION_FORMATS = ['json', 'text', 'verbose_json', 'srt', 'vtt'] as const;

/** What a text transcription (`text`, `srt`, `vtt`) is answered as: WebVTT or plain text, UTF-8. */
export const textTypeOf = (providerType: string): string =>
  /^\s*text\/vtt\s*(;|$)/i.test(providerType) ? 'text/vtt; charset=utf-8' : 'text/plain; charset=utf-8';

const tooLarge = (limit: number) =>
  new PayloadTooLarge(`The upload is larger than ${limit} bytes`, { details: { max_bytes: limit } });

/**
 * The raw multipart body, refused with 413 as soon as it is known to be larger than `limit`. The rest of a refused
 * body is read and dropped, never destroyed: a request destroyed mid-body (as leaving a `for await` over it does)
 * stalled its kept-alive connection, and the next request the edge sent on it waited, then failed 502. Once settled,
 * the request keeps no listener of the reading, nor the chunks through one; a client already gone is not read.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(tooLarge(limit));
  }
  // its close is past: no end would come
  if (req.destroyed) return Promise.reject(clientLeft());
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let size = 0;
    const settle = () => {
      req.off('data', take);
      req.off('end', end);
      req.off('error', fail);
      req.off('close', left);
      chunks = [];
    };
    const take = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else {
        settle();
        req.resume();
        reject(tooLarge(limit));
      }
    };
    const end = () => {
      const body = Buffer.concat(chunks, size);
      settle();
      resolve(body);
    };
    const fail = (err: Error) => {
      settle();
      reject(err);
    };
    // a client that leaves mid-upload: its request closes without an end
    const left = () => fail(clientLeft());
    req.on('data', take);
    req.on('end', end);
    req.on('error', fail);
    req.on('close', left);
  });
}

const clientLeft = () => new Error('the client left before the end of its upload');

interface Upload {
  file: Buffer;
  filename: string;
  mimeType: string;
  model: string | undefined;
  fields: Record<string, string>;
  entries: Array<[string, string]>;
}

/** OpenAI's multipart form: `file` (required), `model`, `response_format`, `language`, `prompt`, ... */
async function parseUpload(req: Request, limit: number): Promise<Upload> {
  const type = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*;/i.test(type))
    throw new InvalidInput('Send the audio as multipart/form-data with a `file` part', {
      details: { issues: [{ field: 'content-type', message: 'multipart/form-data is required' }] },
    });
  const raw = await readBody(req, limit);
  let form: FormData;
  try {
    form = await new Response(raw, { headers: { 'content-type': type } }).formData();
  } catch {
    throw new InvalidInput('The multipart body cannot be read', {
      details: { issues: [{ field: 'body', message: 'malformed multipart/form-data' }] },
    });
  }
  // a second `file` or `model` would be dropped unseen: which audio is transcribed, by which model, is the caller's
  for (const once of ['file', 'model'])
    if (form.getAll(once).length > 1)
      throw new InvalidInput(`Send one \`${once}\` part`, {
        details: { issues: [{ field: once, message: 'sent more than once' }] },
      });
  const file = form.get('file');
  if (!(file instanceof Blob) || file.size === 0)
    throw new InvalidInput('A non-empty `file` part is required', {
      details: { issues: [{ field: 'file', message: 'required' }] },
    });
  // every text part in order: a repeated one (the SDK sends `timestamp_granularities[]` once per value) stays repeated
  const entries: Array<[string, string]> = [];
  for (const [name, value] of form.entries())
    if (name !== 'file' && name !== 'model' && typeof value === 'string') entries.push([name, value]);
  const fields: Record<string, string> = Object.fromEntries(entries);
  const format = fields.response_format ?? 'json';
  if (!(TRANSCRIPTION_FORMATS as readonly string[]).includes(format))
    throw new InvalidInput(`response_format must be one of ${TRANSCRIPTION_FORMATS.join(', ')}`, {
      details: { issues: [{ field: 'response_format', message: 'unsupported format' }] },
    });
  const model = form.get('model');
  // a model sent as a file would be dropped unseen too, and the default model answer in its place
  if (model instanceof Blob)
    throw new InvalidInput('Send `model` as a text part', {
      details: { issues: [{ field: 'model', message: 'a file, not text' }] },
    });
  return {
    file: Buffer.from(await file.arrayBuffer()),
    filename: (file as File).name || 'audio',
    mimeType: file.type || 'application/octet-stream',
    model: typeof model === 'string' && model !== '' ? model : undefined,
    fields,
    entries,
  };
}

/**
 * Seconds of audio in the upload, read from its headers before any provider is called. An upload whose
 * duration cannot be read is refused: it could not be priced, and a provider would refuse it too.
 */
function uploadSeconds(upload: Upload): number {
  const measured = audioDuration(upload.file);
  if (measured === null)
    throw new InvalidInput(
      `The file's audio duration cannot be read: send audio in one of ${AUDIO_FORMATS.join(', ')}`,
      { details: { issues: [{ field: 'file', message: 'not audio in a supported format, or corrupt' }] } },
    );
  return measured.seconds;
}

/** The two routes that turn an upload into text: the provider's endpoint, and what it is called in a refusal. */
const AUDIO_TEXT_TASKS = {
  transcriptions: 'audio transcription',
  translations: 'audio translation',
} as const;

/**
 * `POST /v1/audio/transcriptions` and `/v1/audio/translations` (into English), then `POST /v1/audio/speech`
 * (speech.ts).
 */
export function mountAudio(router: Router, ctx: GatewayContext): void {
  router.post('/v1/audio/transcriptions', audioToText(ctx, 'transcriptions'));
  router.post('/v1/audio/translations', audioToText(ctx, 'translations'));
  mountSpeech(router, ctx);
}

/**
 * OpenAI's multipart upload (`json`, `text`, `verbose_json`, `srt`, `vtt`) to a model of type
 * `audio_transcription`; an upload over LLM_GATEWAY_AUDIO_MAX_BYTES is 413 PAYLOAD_TOO_LARGE. Governance and
 * quotas as chat; priced per minute of audio (`pricing.per_audio_minute`, by the second): the provider's
 * duration when it reports one, else the upload's own (decision 0096).
 */
function audioToText(ctx: GatewayContext, task: keyof typeof AUDIO_TEXT_TASKS): RequestHandler {
  return async (req, res) => {
    const upload = await parseUpload(req, ctx.config.LLM_GATEWAY_AUDIO_MAX_BYTES);
    const measured = uploadSeconds(upload);
    const prepared = await prepareInference(ctx, req, 'audio_transcription', upload.model, 0, (m) => {
      if (!m.adapter[task]) throw noMediaEndpoint(m, AUDIO_TEXT_TASKS[task]);
    });
    const abort = abortOnClose(req, res);
    const stamp = (model: CatalogueModel, outcome: Outcome) => ({
      model,
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      usageSource: 'provider' as const,
      outcome,
      endpoint: 'audio' as const,
      stream: false,
      requestId: requestIdOf(req),
    });
    try {
      const { result, model } = await callPrepared(ctx, req, prepared, abort.signal, (m, call) =>
        m.adapter[task]!(upload, call),
      );
      // the provider's figure wins when the upload can hold it: a negative one credited the organization's
      // budget, and a huge one would charge it without bound
      const reported = result.durationSeconds;
      const seconds = reported !== null && believable(reported, upload.file.length) ? reported : measured;
      const figures = mediaFigures(prepared, (seconds / 60) * (model.pricing.per_audio_minute ?? 0));
      res.set({
        'x-platform-audio-seconds': String(seconds),
        'x-platform-cost': String(figures.cost),
        ...modelChoiceHeaders(prepared, model),
      });
      if (result.body !== null && typeof result.body === 'object') {
        const body = result.body as Record<string, unknown>;
        res.json({
          ...body,
          usage: {
            ...((body.usage as Record<string, unknown> | undefined) ?? { type: 'duration' }),
            seconds: seconds,
            cost: figures.cost,
            duration_ms: figures.durationMs,
          },
        });
      } else {
        // the provider's own content type is not passed on: one saying text/html would make the
        // platform's origin serve the provider's markup (a page with scripts) to the caller's browser
        res
          .type(textTypeOf(result.contentType))
          .set('x-content-type-options', 'nosniff')
          .send(String(result.body));
      }
      void account(ctx, { ...prepared, model }, stamp(model, 'success'), figures);
    } catch (err) {
      const outcome: Outcome = abort.signal.aborted ? 'client_cancelled' : 'provider_error';
      void account(ctx, prepared, stamp(failedOn(prepared), outcome), mediaFigures(prepared, 0));
      throw err;
    }
  };
}
