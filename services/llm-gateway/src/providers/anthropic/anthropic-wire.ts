/** The parts of Anthropic's Messages API the adapter speaks. */

/** A prompt-cache breakpoint: the prefix up to and including the block that carries it is cached (decision 0113). */
export interface AnthropicCacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

type Cached = { cache_control?: AnthropicCacheControl };

export type AnthropicTextBlock = { type: 'text'; text: string } & Cached;

export type AnthropicBlock =
  | AnthropicTextBlock
  | ({
      type: 'image';
      source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };
    } & Cached)
  | ({ type: 'tool_use'; id: string; name: string; input: unknown } & Cached)
  | ({
      type: 'tool_result';
      tool_use_id: string;
      content: string | AnthropicBlock[];
      is_error?: boolean;
    } & Cached)
  | { type: string; [key: string]: unknown };

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: AnthropicBlock[];
}

export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: unknown;
  cache_control?: AnthropicCacheControl;
}

/** Extended thinking (decision 0114): `enabled` with a budget of at least 1,024 tokens under `max_tokens` */
export interface AnthropicThinking {
  type: string;
  budget_tokens?: number;
  [key: string]: unknown;
}

export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  messages: AnthropicMessage[];
  /** a string, or text blocks when a breakpoint falls in the system prompt */
  system?: string | AnthropicTextBlock[];
  tools?: AnthropicTool[];
  tool_choice?: {
    type: 'auto' | 'any' | 'none' | 'tool';
    name?: string;
    disable_parallel_tool_use?: boolean;
  };
  temperature?: number;
  top_p?: number;
  stop_sequences?: string[];
  metadata?: { user_id?: string };
  stream?: boolean;
  thinking?: AnthropicThinking;
}

export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  /** the cache writes by TTL (their sum is `cache_creation_input_tokens`): a 1-hour write costs more (0113) */
  cache_creation?: {
    ephemeral_5m_input_tokens?: number | null;
    ephemeral_1h_input_tokens?: number | null;
  } | null;
}

export interface AnthropicResponse {
  id: string;
  type: 'message';
  model: string;
  content: AnthropicBlock[];
  stop_reason: string | null;
  /** the stop sequence that ended the answer (`stop_reason: "stop_sequence"`) */
  stop_sequence?: string | null;
  usage: AnthropicUsage;
}
