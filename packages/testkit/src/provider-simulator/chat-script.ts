import { argumentsFromSchema, countSimulatorTokens, simulatedAnswer, truncateToTokens } from './content';
import type { SimulatorRule, SimulatorToolCall } from './script';

/** The model's decision for one turn, common to both wire formats. */
export interface ChatDecision {
  text: string;
  toolCalls: Array<{ name: string; arguments: string }>;
  finish: 'stop' | 'length' | 'tool_calls';
  completionTokens: number;
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
  const full = rule.reply?.content ?? simulatedAnswer(input.lastUserText);
  const limited =
    input.maxTokens !== undefined && countSimulatorTokens(full) > input.maxTokens
      ? truncateToTokens(full, input.maxTokens)
      : full;
  return {
    text: limited,
    toolCalls: [],
    finish: limited === full ? 'stop' : 'length',
    completionTokens: rule.reply?.usage?.completion_tokens ?? countSimulatorTokens(limited),
  };
}

/** Splits a tool call's arguments into a few stream pieces, as providers do. */
export function argumentPieces(text: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += 8) pieces.push(text.slice(i, i + 8));
  return pieces;
}
