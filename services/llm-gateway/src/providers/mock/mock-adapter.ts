import type { Clock } from '@platform/kernel';
import { audioDuration } from '../../audio/duration';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  EmbeddingsResponse,
  ProviderAdapter,
  ProviderCall,
  ProviderSpec,
  TextCompletion,
  TextCompletionChunk,
  TextCompletionRequest,
  TranscriptionResult,
  TranscriptionUpload,
  Usage,
} from '../types';
import { ProviderError, RequestRefusedForProvider } from '../types';
import {
  hashOf,
  lexicalScore,
  mockEmbedding,
  mockPromptTokens,
  mockReasoning,
  mockTextCompletion,
  mockTokens,
  mockTurn,
  tokenPieces,
} from './mock-model';
import { solidPng } from './png';
import { mockSpeechSeconds, toneWav } from './tone-wav';

/** Dimensions of a mock embedding when the request names none. */
export const MOCK_EMBEDDING_DIMENSIONS = 256;
/**
 * The most dimensions the mock computes (OpenAI's largest embedding model's): the vectors are computed and
 * serialised in the gateway's process, so `dimensions: 100000000` would otherwise take all its memory.
 */
const MOCK_MAX_EMBEDDING_DIMENSIONS = 3072;
/**
 * The most choices (prompts × `n`) the mock answers in one text completion: they are generated, streamed and counted
 * in the gateway's process: a load test's 2048 prompts × `n` 128, streamed, did not end in 30 s.
 */
const MOCK_MAX_CHOICES = 2048;

/** The usage; reasoning tokens are completion tokens too, and said apart as OpenAI says them. */
const usageOf = (prompt: number, completion: number, reasoning = 0): Usage => ({
  prompt_tokens: prompt,
  completion_tokens: completion + reasoning,
  total_tokens: prompt + completion + reasoning,
  ...(reasoning > 0 ? { completion_tokens_details: { reasoning_tokens: reasoning } } : {}),
});

function abortIfNeeded(call: ProviderCall): void {
  if (call.signal.aborted) throw call.signal.reason ?? new Error('aborted');
}

/** the pieces the mock's speech is answered in, as a provider streams it */
const SPEECH_PIECE_BYTES = 16 * 1024;

async function* streamed(pieces: Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* pieces;
}

/** why the mock will not answer a text completion (more choices than it answers), or null */
function textRefusal(body: TextCompletionRequest): string | null {
  const prompts = Array.isArray(body.prompt) && typeof body.prompt[0] !== 'number' ? body.prompt.length : 1;
  const asked = prompts * (body.n ?? 1);
  return asked > MOCK_MAX_CHOICES
    ? `the mock answers at most ${MOCK_MAX_CHOICES} choices a request (prompts × n), here ${asked}`
    : null;
}

/** The built-in `mock` provider: deterministic answers computed in process, no network. */
export function createMockAdapter(spec: ProviderSpec, deps: { clock: Clock }): ProviderAdapter {
  const created = () => Math.floor(deps.clock.now().getTime() / 1000);
  const idFor = (prefix: string, body: unknown) => `${prefix}${hashOf(body).toString('hex').slice(0, 24)}`;

  /** a chat answer: `n` choices (OpenAI's), each the same turn, and the usage of all of them */
  function answer(body: ChatCompletionRequest, call: ProviderCall) {
    abortIfNeeded(call);
    const turn = mockTurn(body);
    const reasoning = mockReasoning(body);
    const id = idFor('chatcmpl-mock-', body.messages);
    const n = typeof body.n === 'number' ? body.n : 1;
    const usage = usageOf(
      mockPromptTokens(body),
      n * turn.completionTokens,
      reasoning === null ? 0 : n * mockTokens(reasoning),
    );
    const toolCalls = turn.toolCall
      ? [{ id: `call_${id.slice(-16)}`, type: 'function' as const, function: turn.toolCall }]
      : undefined;
    return { turn, reasoning, id, n, usage, toolCalls };
  }

  /** a text completion (decision 0115): its choices, usage and the head of its answer and chunks */
  function textAnswer(body: Parameters<NonNullable<ProviderAdapter['completions']>>[0], call: ProviderCall) {
    abortIfNeeded(call);
    const refusal = textRefusal(body);
    if (refusal) throw new RequestRefusedForProvider(spec.name, call.model, refusal);
    const { promptTokens, choices } = mockTextCompletion(body);
    const completion = choices.reduce((n, c) => n + c.completionTokens, 0);
    const head = {
      id: idFor('cmpl-mock-', [body.prompt, body.suffix ?? null]),
      object: 'text_completion' as const,
      created: created(),
      model: call.model,
    };
    return { choices, head, usage: usageOf(promptTokens, completion) };
  }

  const adapter: ProviderAdapter = {
    name: spec.name,
    maxEmbeddingDimensions: MOCK_MAX_EMBEDDING_DIMENSIONS,

    async chat(body, call) {
      const { turn, reasoning, id, n, usage, toolCalls } = answer(body, call);
      const completion: ChatCompletion = {
        id,
        object: 'chat.completion',
        created: created(),
        model: call.model,
        choices: Array.from({ length: n }, (_, index) => ({
          index,
          message: {
            role: 'assistant' as const,
            content: turn.text,
            refusal: null,
            ...(reasoning === null ? {} : { reasoning_content: reasoning }),
            ...(toolCalls ? { tool_calls: toolCalls } : {}),
          },
          finish_reason: turn.finish,
          logprobs: null,
        })),
        usage,
      };
      return { body: completion, usage };
    },

    async *chatStream(body, call) {
      const { turn, reasoning, id, n, usage, toolCalls } = answer(body, call);
      const head = { id, object: 'chat.completion.chunk' as const, created: created(), model: call.model };
      // the choices one after the other, as the mock's text completions stream them
      for (let choice = 0; choice < n; choice++) {
        const chunk = (
          delta: ChatCompletionChunk['choices'][number]['delta'],
          finish: ChatCompletion['choices'][number]['finish_reason'] = null,
        ): ChatCompletionChunk => ({
          ...head,
          choices: [{ index: choice, delta, finish_reason: finish, logprobs: null }],
        });
        yield chunk({ role: 'assistant', content: '' });
        for (const piece of tokenPieces(reasoning ?? '')) {
          abortIfNeeded(call);
          yield chunk({ reasoning_content: piece });
        }
        for (const piece of tokenPieces(turn.text ?? '')) {
          abortIfNeeded(call);
          yield chunk({ content: piece });
        }
        for (const [index, tool] of (toolCalls ?? []).entries()) {
          yield chunk({
            tool_calls: [
              { index, id: tool.id, type: 'function', function: { name: tool.function.name, arguments: '' } },
            ],
          });
          for (let at = 0; at < tool.function.arguments.length; at += 16)
            yield chunk({
              tool_calls: [{ index, function: { arguments: tool.function.arguments.slice(at, at + 16) } }],
            });
        }
        yield chunk({}, turn.finish);
      }
      yield { ...head, choices: [], usage };
    },

    async completions(body, call) {
      const { choices, head, usage } = textAnswer(body, call);
      const completion: TextCompletion = {
        ...head,
        choices: choices.map((c, index) => ({
          text: c.text,
          index,
          logprobs: null,
          finish_reason: c.finish,
        })),
        usage,
      };
      return { body: completion, usage };
    },

    completionsRefusal: textRefusal,

    async *completionsStream(body, call) {
      const { choices, head, usage } = textAnswer(body, call);
      const chunk = (
        index: number,
        text: string,
        finish: TextCompletion['choices'][number]['finish_reason'] = null,
      ): TextCompletionChunk => ({
        ...head,
        choices: [{ text, index, logprobs: null, finish_reason: finish }],
      });
      for (const [index, choice] of choices.entries()) {
        const pieces = tokenPieces(choice.text);
        // an echoed prompt's trailing spaces, which no piece holds (the code before a cursor often ends so)
        const rest = choice.text.slice(pieces.join('').length);
        for (const piece of rest ? [...pieces, rest] : pieces) {
          abortIfNeeded(call);
          yield chunk(index, piece);
        }
        yield chunk(index, '', choice.finish);
      }
      yield { ...head, choices: [], usage };
    },

    async embeddings(body, call) {
      abortIfNeeded(call);
      const inputs: unknown[] =
        typeof body.input === 'string' || (Array.isArray(body.input) && typeof body.input[0] === 'number')
          ? [body.input]
          : (body.input as unknown[]);
      const dimensions = body.dimensions ?? MOCK_EMBEDDING_DIMENSIONS;
      if (dimensions > MOCK_MAX_EMBEDDING_DIMENSIONS)
        throw new RequestRefusedForProvider(
          spec.name,
          call.model,
          `the mock computes at most ${MOCK_MAX_EMBEDDING_DIMENSIONS} dimensions`,
        );
      let prompt = 0;
      const data = inputs.map((input, index) => {
        prompt += typeof input === 'string' ? mockTokens(input) : Array.isArray(input) ? input.length : 0;
        const vector = mockEmbedding(input, dimensions);
        const embedding =
          body.encoding_format === 'base64'
            ? Buffer.from(new Float32Array(vector).buffer).toString('base64')
            : vector;
        return { object: 'embedding' as const, index, embedding };
      });
      const response: EmbeddingsResponse = {
        object: 'list',
        data,
        model: call.model,
        usage: { prompt_tokens: prompt, total_tokens: prompt },
      };
      return { body: response, usage: usageOf(prompt, 0) };
    },

    async rerank(body, call) {
      abortIfNeeded(call);
      const results = body.documents
        .map((document, index) => ({ index, relevance_score: lexicalScore(body.query, document) }))
        .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
        .slice(0, body.top_n ?? body.documents.length);
      const tokens = body.documents.reduce((s, d) => s + mockTokens(body.query) + mockTokens(d), 0);
      return { results, usage: usageOf(tokens, 0) };
    },

    async images(body, call) {
      abortIfNeeded(call);
      const n = body.n ?? 1;
      const data = Array.from({ length: n }, (_, i) => {
        const png = solidPng(`${body.prompt}#${i}`).toString('base64');
        return body.response_format === 'url' ? { url: `data:image/png;base64,${png}` } : { b64_json: png };
      });
      return { body: { created: created(), data } };
    },

    transcriptions: async (upload, call) => audioText(upload, call, 'transcribe'),
    translations: async (upload, call) => audioText(upload, call, 'translate'),

    // a tone whose length follows the input's, as WAV whatever format is asked (so its content type says
    // audio/wav); with `stream_format: sse`, OpenAI's events carrying it in base64
    async speech(body, call) {
      abortIfNeeded(call);
      const wav = toneWav(mockSpeechSeconds([...body.input].length, body.speed));
      const pieces: Uint8Array[] = [];
      for (let at = 0; at < wav.length; at += SPEECH_PIECE_BYTES)
        pieces.push(wav.subarray(at, at + SPEECH_PIECE_BYTES));
      if (body.stream_format !== 'sse') return { contentType: 'audio/wav', audio: streamed(pieces) };
      const tokens = mockTokens(body.input);
      const event = (data: unknown) => Buffer.from(`data: ${JSON.stringify(data)}\n\n`);
      return {
        contentType: 'text/event-stream',
        audio: streamed([
          ...pieces.map((piece) =>
            event({ type: 'speech.audio.delta', audio: Buffer.from(piece).toString('base64') }),
          ),
          event({
            type: 'speech.audio.done',
            usage: { input_tokens: tokens, output_tokens: 0, total_tokens: tokens },
          }),
        ]),
      };
    },
  };

  /** A transcription (or a translation into English) in the format asked. */
  function audioText(
    upload: TranscriptionUpload,
    call: ProviderCall,
    task: 'transcribe' | 'translate',
  ): TranscriptionResult {
    abortIfNeeded(call);
    const duration = audioDuration(upload.file)?.seconds ?? null;
    const text = `Mock ${task === 'transcribe' ? 'transcription' : 'translation'} of ${upload.filename}: ${upload.file.length} bytes${
      duration === null ? '' : `, ${duration.toFixed(2)} seconds`
    }.`;
    const seconds = duration ?? 0;
    const stamp = (s: number, sep: string) => {
      const ms = Math.round(s * 1000);
      const p = (v: number, w = 2) => String(v).padStart(w, '0');
      return `${p(Math.floor(ms / 3_600_000))}:${p(Math.floor(ms / 60_000) % 60)}:${p(Math.floor(ms / 1000) % 60)}${sep}${p(ms % 1000, 3)}`;
    };
    const format = upload.fields.response_format ?? 'json';
    const result = (body: unknown, contentType: string) => ({
      body,
      contentType,
      durationSeconds: duration,
    });
    switch (format) {
      case 'json':
        return result({ text }, 'application/json');
      case 'verbose_json': {
        // OpenAI's: segment timestamps unless only word ones are asked for, `words` when they are
        const granularities = (upload.entries ?? [])
          .filter(([name]) => name === 'timestamp_granularities[]' || name === 'timestamp_granularities')
          .map(([, value]) => value);
        const words = text.split(/\s+/).filter(Boolean);
        const step = words.length ? seconds / words.length : 0;
        return result(
          {
            task,
            language: task === 'translate' ? 'english' : (upload.fields.language ?? 'english'),
            duration: seconds,
            text,
            ...(granularities.includes('word')
              ? { words: words.map((word, i) => ({ word, start: i * step, end: (i + 1) * step })) }
              : {}),
            ...(granularities.length === 0 || granularities.includes('segment')
              ? { segments: [{ id: 0, start: 0, end: seconds, text }] }
              : {}),
          },
          'application/json',
        );
      }
      case 'text':
        return result(`${text}\n`, 'text/plain; charset=utf-8');
      case 'srt':
        return result(
          `1\n${stamp(0, ',')} --> ${stamp(seconds, ',')}\n${text}\n\n`,
          'text/plain; charset=utf-8',
        );
      case 'vtt':
        return result(
          `WEBVTT\n\n${stamp(0, '.')} --> ${stamp(seconds, '.')}\n${text}\n\n`,
          'text/vtt; charset=utf-8',
        );
      default:
        throw new ProviderError({
          provider: spec.name,
          model: call.model,
          upstreamStatus: 400,
          providerErrorType: 'invalid_request_error',
          retryable: false,
          message: `response_format must be json, text, srt, verbose_json or vtt`,
        });
    }
  }

  return adapter;
}
