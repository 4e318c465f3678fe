import { argumentsFromSchema, countSimulatorTokens, simulatedAnswer, truncateToTokens } from './content';
import type { SimulatorRule, SimulatorToolCall } from './script';

/** The model's decision for one turn, common to both wire formats. */
export interface ChatDecision {
  text: string;
  toolCalls: Array<{ name: string; arguments: string }>;
  finish: 'stop' | 'length' | 'tool_calls';
  completionTokens: number;
  /** the stop sequence that ended the text (cut before it), when one did */
  stopSequence?: string;
}

export interface ChatTurnInput {
  lastUserText: string;
  /** the last message is the user's (not a tool result), so a tool may be called */
  userSpokeLast: boolean;
  /** tools offered, with their parameter schemas */
  tools: Array<{ name: string; parameters: unknown }>;
  /** `none`, `auto`, `required`, or one tool's name */
  toolChoice: string;
  maxTokens: number | undefined;
  /** the request's stop sequences: the text ends before the first one it holds */
  stop?: readonly string[];
}

/** The text up to the first of the stop sequences it holds, and that sequence; the text itself when none. */
function cutAtStop(text: string, stop: readonly string[] | undefined): { text: string; sequence?: string } {
  let at = -1;
  let sequence: string | undefined;
  for (const candidate of stop ?? []) {
    const index = candidate === '' ? -1 : text.indexOf(candidate);
    if (index !== -1 && (at === -1 || index < at)) [at, sequence] = [index, candidate];
  }
  return sequence === undefined ? { text } : { text: text.slice(0, at), sequence };
}

const serialise = (call: SimulatorToolCall) => ({
  name: call.name,
  arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
});

export function decideTurn(input: ChatTurnInput, rule: SimulatorRule): ChatDecision {
  let toolCalls = (rule.reply?.toolCalls ?? []).map(serialise);
  if (
    !rule.reply?.toolCalls &&
    input.tools.length > 0 &&
    input.toolChoice !== 'none' &&
    input.userSpokeLast
  ) {
    const tool = input.tools.find((t) => t.name === input.toolChoice) ?? input.tools[0]!;
    toolCalls = [{ name: tool.name, arguments: JSON.stringify(argumentsFromSchema(tool.parameters)) }];
  }
  const toolTokens = toolCalls.reduce(
    (sum, call) => sum + countSimulatorTokens(call.name) + countSimulatorTokens(call.arguments),
    0,
  );
  if (toolCalls.length > 0) {
    const text = rule.reply?.content ?? '';
    return {
      text,
      toolCalls,
      finish: 'tool_calls',
      completionTokens: rule.reply?.usage?.completion_tokens ?? countSimulatorTokens(text) + toolTokens,
    };
  }
  const { text: full, sequence } = cutAtStop(
    rule.reply?.content ?? simulatedAnswer(input.lastUserText),
    input.stop,
  );
  const limited =
    input.maxTokens !== undefined && countSimulatorTokens(full) > input.maxTokens
      ? truncateToTokens(full, input.maxTokens)
      : full;
  return {
    text: limited,
    toolCalls: [],
    finish: limited === full ? 'stop' : 'length',
    completionTokens: rule.reply?.usage?.completion_tokens ?? countSimulatorTokens(limited),
    ...(limited === full && sequence !== undefined ? { stopSequence: sequence } : {}),
  };
}

/** Splits a tool call's arguments into a few stream pieces, as providers do. */
export function argumentPieces(text: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += 8) pieces.push(text.slice(i, i + 8));
  return pieces;
}
