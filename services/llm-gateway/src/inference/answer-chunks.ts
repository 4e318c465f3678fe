import type { ChatChunk, ChatCompletion, TextCompletion, TextCompletionChunk } from './provider-port';

/**
 * A whole answer told as the stream its provider would have sent, for a deployment that is called without
 * streaming (`exclude_parameters: [stream]`, decision 0119): each choice's message in one chunk, then its
 * finish, then the usage chunk (`choices: []`) when the provider reported usage, as a stream asked for usage ends.
 */
export function chatChunksOf(answer: ChatCompletion): ChatChunk[] {
  // the port's chunk type names only what the flow reads; these are whole OpenAI chunks
  const head = chunkHead(answer, 'chat.completion.chunk');
  const choices = (answer.choices ?? []) as Array<Record<string, unknown> & { message?: unknown }>;
  const chunks: Array<Record<string, unknown>> = [];
  choices.forEach((choice, i) => {
    const index = typeof choice.index === 'number' ? choice.index : i;
    const { tool_calls, ...message } = (choice.message ?? {}) as Record<string, unknown>;
    const delta: Record<string, unknown> = { ...message, role: 'assistant' };
    if (Array.isArray(tool_calls))
      delta.tool_calls = tool_calls.map((call, position) => ({ index: position, ...(call as object) }));
    chunks.push({
      ...head,
      choices: [{ index, delta, logprobs: choice.logprobs ?? null, finish_reason: null }],
    });
  });
  choices.forEach((choice, i) => {
    const index = typeof choice.index === 'number' ? choice.index : i;
    // what else the provider says of the choice (vLLM's and the Anthropic adapter's `stop_reason`, the stop sequence;
    // Azure's `content_filter_results`) comes with its finish, as a streaming provider sends it
    const { message: _message, logprobs: _logprobs, index: _index, finish_reason, ...said } = choice;
    chunks.push({
      ...head,
      choices: [{ ...said, index, delta: {}, finish_reason: (finish_reason as string | null) ?? 'stop' }],
    });
  });
  if (answer.usage) chunks.push({ ...head, choices: [], usage: answer.usage });
  return chunks as ChatChunk[];
}

/** A whole text completion told as a stream: each choice's text with its finish, then the usage chunk. */
export function textChunksOf(answer: TextCompletion): TextCompletionChunk[] {
  const head = chunkHead(answer, 'text_completion');
  const choices = (answer.choices ?? []) as Array<Record<string, unknown>>;
  const chunks: TextCompletionChunk[] = choices.map((choice, i) => ({
    ...head,
    choices: [
      {
        ...choice,
        index: typeof choice.index === 'number' ? choice.index : i,
        text: typeof choice.text === 'string' ? choice.text : '',
        finish_reason: (choice.finish_reason as string | null) ?? 'stop',
      },
    ],
  }));
  if (answer.usage)
    chunks.push({ ...head, choices: [], usage: answer.usage as TextCompletionChunk['usage'] });
  return chunks;
}

/** the members every chunk of the stream repeats */
function chunkHead(answer: Record<string, unknown>, object: string): Record<string, unknown> {
  const head: Record<string, unknown> = {
    id: answer.id,
    object,
    created: answer.created,
    model: answer.model,
  };
  if (answer.system_fingerprint !== undefined) head.system_fingerprint = answer.system_fingerprint;
  return head;
}
