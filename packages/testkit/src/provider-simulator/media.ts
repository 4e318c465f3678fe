import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import { type SimulatedAnswer, SimulatedProviderError } from './answers';
import { countSimulatorTokens } from './content';
import type { ExchangeContext } from './openai';

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A valid 8×8 RGB PNG of one colour derived from the prompt. */
function simulatedPng(prompt: string): Buffer {
  const [r, g, b] = createHash('sha256').update(prompt).digest();
  const size = 8;
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit depth, truecolour, deflate, no filter, no interlace
  const row = Buffer.from([0, ...Array.from({ length: size }, () => [r!, g!, b!]).flat()]);
  const raw = Buffer.concat(Array.from({ length: size }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

type Json = Record<string, unknown>;

export function openaiImages(
  body: Json,
  ctx: ExchangeContext,
  publish: (png: Buffer) => string,
): SimulatedAnswer {
  if (typeof body.prompt !== 'string' || !body.prompt)
    throw new SimulatedProviderError(400, 'invalid_request_error', "'prompt' is required");
  const n = typeof body.n === 'number' ? body.n : 1;
  if (!Number.isInteger(n) || n < 1 || n > 10)
    throw new SimulatedProviderError(400, 'invalid_request_error', "'n' must be between 1 and 10");
  const asUrl = body.response_format === 'url';
  const data = Array.from({ length: n }, (_, i) => {
    const png = simulatedPng(`${body.prompt}#${i}`);
    return asUrl ? { url: publish(png) } : { b64_json: png.toString('base64') };
  });
  const inputTokens = countSimulatorTokens(body.prompt);
  return {
    kind: 'json',
    body: {
      created: ctx.created,
      data,
      usage: { input_tokens: inputTokens, output_tokens: 0, total_tokens: inputTokens },
    },
  };
}

/** Seconds of audio in a PCM WAV file (from its header), or null when it is not one. */
function wavDuration(file: Buffer): number | null {
  if (file.length < 12 || file.toString('ascii', 0, 4) !== 'RIFF' || file.toString('ascii', 8, 12) !== 'WAVE')
    return null;
  let byteRate = 0;
  for (let at = 12; at + 8 <= file.length; ) {
    const id = file.toString('ascii', at, at + 4);
    const size = file.readUInt32LE(at + 4);
    if (id === 'fmt ' && at + 16 <= file.length) byteRate = file.readUInt32LE(at + 16);
    if (id === 'data') {
      if (!byteRate) return null;
      const dataBytes = Math.min(size, file.length - at - 8);
      return dataBytes / byteRate;
    }
    at += 8 + size + (size % 2);
  }
  return null;
}

const clockTime = (seconds: number, separator: string) => {
  const ms = Math.round(seconds * 1000);
  const pad = (v: number, w = 2) => String(v).padStart(w, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
};

/** The words of a transcript spread evenly over the audio, as `verbose_json`'s `words`. */
function wordTimings(text: string, duration: number) {
  const words = text.split(/\s+/).filter(Boolean);
  const step = words.length ? duration / words.length : 0;
  const at = (v: number) => Math.round(v * 1000) / 1000;
  return words.map((word, i) => ({ word, start: at(i * step), end: at((i + 1) * step) }));
}

/** OpenAI's `/audio/transcriptions` and `/audio/translations`: multipart in, json | text | verbose_json | srt | vtt out. */
export async function openaiTranscription(
  raw: Buffer,
  contentType: string,
  ctx: ExchangeContext,
  endpoint: 'transcriptions' | 'translations' = 'transcriptions',
): Promise<{
  answer: SimulatedAnswer;
  /** a field sent more than once (`timestamp_granularities[]`) holds the array of its values */
  fields: Record<string, string | string[]>;
  file: { filename: string; size: number };
}> {
  let form: FormData;
  try {
    form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
  } catch {
    throw new SimulatedProviderError(400, 'invalid_request_error', 'expected a multipart/form-data body');
  }
  const fields: Record<string, string> = {};
  const repeated: Record<string, string[]> = {};
  let file: File | undefined;
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') {
      fields[name] = value;
      repeated[name] = [...(repeated[name] ?? []), value];
    } else if (name === 'file') file = value as File;
  }
  if (!file) throw new SimulatedProviderError(400, 'invalid_request_error', "'file' is required");
  if (!fields.model) throw new SimulatedProviderError(400, 'invalid_request_error', "'model' is required");
  const bytes = Buffer.from(await file.arrayBuffer());
  const duration = Math.round((wavDuration(bytes) ?? bytes.length / 32_000) * 1000) / 1000;
  const translate = endpoint === 'translations';
  const text =
    ctx.rule.transcript ??
    `Simulated ${translate ? 'translation' : 'transcription'} of ${file.name} (${bytes.length} bytes).`;
  const format = fields.response_format ?? 'json';
  const recorded = Object.fromEntries(
    Object.entries(repeated).map(([name, values]) => [name, values.length > 1 ? values : values[0]!]),
  );
  const meta = { fields: recorded, file: { filename: file.name, size: bytes.length } };
  // OpenAI: `segment` timestamps unless only `word` ones are asked for; `words` when `word` is
  const granularities = repeated['timestamp_granularities[]'] ?? [];
  const segments = granularities.length === 0 || granularities.includes('segment');
  const words = granularities.includes('word') ? wordTimings(text, duration) : undefined;
  switch (format) {
    case 'json':
      return {
        ...meta,
        answer: { kind: 'json', body: { text, usage: { type: 'duration', seconds: Math.ceil(duration) } } },
      };
    case 'text':
      return {
        ...meta,
        answer: {
          kind: 'text',
          body: `${text}\n`,
          contentType: ctx.rule.transcriptContentType ?? 'text/plain; charset=utf-8',
        },
      };
    case 'verbose_json':
      return {
        ...meta,
        answer: {
          kind: 'json',
          body: {
            task: translate ? 'translate' : 'transcribe',
            language: translate ? 'english' : (fields.language ?? 'english'),
            duration,
            text,
            ...(words ? { words } : {}),
            ...(segments
              ? { segments: [{ id: 0, seek: 0, start: 0, end: duration, text, tokens: [], temperature: 0 }] }
              : {}),
          },
        },
      };
    case 'srt':
      return {
        ...meta,
        answer: {
          kind: 'text',
          body: `1\n${clockTime(0, ',')} --> ${clockTime(duration, ',')}\n${text}\n\n`,
          contentType: 'text/plain; charset=utf-8',
        },
      };
    case 'vtt':
      return {
        ...meta,
        answer: {
          kind: 'text',
          body: `WEBVTT\n\n${clockTime(0, '.')} --> ${clockTime(duration, '.')}\n${text}\n\n`,
          contentType: 'text/vtt; charset=utf-8',
        },
      };
    default:
      throw new SimulatedProviderError(
        400,
        'invalid_request_error',
        `unsupported response_format '${format}'`,
      );
  }
}

/** OpenAI's content type for each speech `response_format` */
const SPEECH_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** how the bytes of each format begin (an MPEG audio frame header, Ogg, ADTS, FLAC, RIFF); pcm has none */
const SPEECH_MAGIC: Record<string, Buffer> = {
  mp3: Buffer.from([0xff, 0xfb, 0x18, 0xc0]),
  opus: Buffer.from('OggS'),
  aac: Buffer.from([0xff, 0xf1]),
  flac: Buffer.from('fLaC'),
  wav: Buffer.from('RIFF'),
  pcm: Buffer.alloc(0),
};

/** Bytes of audio a second (OpenAI's pcm: 24 kHz, 16-bit, mono) and a second per this many characters. */
const SPEECH_BYTES_PER_SECOND = 48_000;
const SPEECH_CHARACTERS_PER_SECOND = 15;
/** the pieces the audio is written in (a rule's `streamFailure.afterChunks` counts them) */
const SPEECH_CHUNK_BYTES = 4096;

/**
 * OpenAI's `/audio/speech`: silence whose length follows the input's (a second per 15 characters, over
 * `speed`), beginning as the format's bytes do, answered in chunks of 4 KiB with the format's content type;
 * with `stream_format: sse`, `speech.audio.delta` events then `speech.audio.done` with the usage.
 */
export function openaiSpeech(body: Json): SimulatedAnswer {
  const refuse = (message: string) => new SimulatedProviderError(400, 'invalid_request_error', message);
  if (typeof body.model !== 'string' || !body.model) throw refuse("'model' is required");
  if (typeof body.input !== 'string' || !body.input) throw refuse("'input' is required");
  const characters = [...body.input].length;
  if (characters > 4096) throw refuse("'input' is longer than 4096 characters");
  if (body.voice === undefined) throw refuse("'voice' is required");
  const format = typeof body.response_format === 'string' ? body.response_format : 'mp3';
  if (!SPEECH_TYPES[format]) throw refuse(`unsupported response_format '${format}'`);
  const speed = typeof body.speed === 'number' ? body.speed : 1;
  const size = Math.ceil((characters / SPEECH_CHARACTERS_PER_SECOND / speed) * SPEECH_BYTES_PER_SECOND);
  const audio = Buffer.alloc(Math.max(size, 64));
  SPEECH_MAGIC[format]!.copy(audio);
  const chunks: Buffer[] = [];
  for (let at = 0; at < audio.length; at += SPEECH_CHUNK_BYTES)
    chunks.push(audio.subarray(at, at + SPEECH_CHUNK_BYTES));
  if (body.stream_format !== 'sse') return { kind: 'chunks', chunks, contentType: SPEECH_TYPES[format]! };
  const tokens = countSimulatorTokens(body.input);
  const frame = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
  return {
    kind: 'sse',
    frames: [
      ...chunks.map((chunk) => frame({ type: 'speech.audio.delta', audio: chunk.toString('base64') })),
      frame({
        type: 'speech.audio.done',
        usage: { input_tokens: tokens, output_tokens: 0, total_tokens: tokens },
      }),
    ],
    errorFrame: (type, message) => frame({ type: 'error', error: { type, message } }),
  };
}
