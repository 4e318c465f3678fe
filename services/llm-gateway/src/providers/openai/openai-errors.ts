import type { ErrorTypeReader } from '../http/provider-http';

const text = (v: unknown) => (typeof v === 'string' && v ? v : null);

/**
 * OpenAI and its imitators disagree on where the error sits: `{error: {type, code, message}}` (OpenAI,
 * Groq, Ollama, llama.cpp, Azure), `{object: "error", type, code, message}` (Mistral, vLLM) or
 * `{error: "text"}`. The specific `code` ("rate_limit_exceeded", "invalid_api_key") wins over the broad
 * `type` unless it is only a number (vLLM, llama.cpp and Azure repeat the status there).
 */
export const readOpenAiError: ErrorTypeReader = (body) => {
  if (typeof body !== 'object' || body === null) return { type: null, message: null };
  const outer = body as Record<string, unknown>;
  if (typeof outer.error === 'string') return { type: null, message: outer.error };
  const e = (typeof outer.error === 'object' && outer.error !== null ? outer.error : outer) as Record<
    string,
    unknown
  >;
  const code = text(e.code);
  return {
    type: (code && !/^\d+$/.test(code) ? code : null) ?? text(e.type),
    message: text(e.message),
  };
};
