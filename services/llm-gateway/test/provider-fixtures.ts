import type { ChatChunk } from '../src/inference/provider-port';
import type { ChatCompletionChunk, ProviderCall } from '../src/providers';

// What a provider adapter is given and what a provider streams, for the tests of the adapters and of the
// writers of the answers made of those chunks.

/**
 * A call of `model` as the gateway makes it: no headers, never aborted (unless `over` says), and a 10-second timeout,
 * since an answer the test expects must not become a timeout on a loaded machine (a test of timeouts sets its own).
 */
export const providerCall = (model: string, over: Partial<ProviderCall> = {}): ProviderCall => ({
  model,
  headers: {},
  timeoutMs: 10_000,
  signal: new AbortController().signal,
  ...over,
});

/** Every chunk of an adapter's stream, in order. */
export async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** A provider's stream chunk of answer text, the last one when `finish` is given. */
export const textChunk = (content: string, finish: string | null = null): ChatChunk => ({
  choices: [{ delta: { content }, finish_reason: finish }],
});

/**
 * A stream chunk of tool call `index`: its first names the call (`id`, `name`), the next ones carry more of its
 * arguments.
 */
export const toolCallChunk = (
  index: number,
  fields: { id?: string; name?: string; arguments?: string },
): ChatChunk => ({
  choices: [
    {
      delta: {
        tool_calls: [
          {
            index,
            ...(fields.id ? { id: fields.id, type: 'function' } : {}),
            function: { ...(fields.name ? { name: fields.name } : {}), arguments: fields.arguments ?? '' },
          },
        ],
      },
    },
  ],
});

/** The stream chunk that ends the answer for `reason`. */
export const finishChunk = (reason: string): ChatChunk => ({
  choices: [{ delta: {}, finish_reason: reason }],
});
