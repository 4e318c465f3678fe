import { newId } from '../inference/responses-answer';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const text = (role: string, value: string): Json =>
  role === 'assistant'
    ? { type: 'output_text', text: value, annotations: [], logprobs: [] }
    : { type: 'input_text', text: value };

/**
 * A request's `input` as the items `GET /v1/responses/{id}/input_items` lists and a later turn reads again: a
 * string is one user message, a message's string content one text part, and every item has its `id` (the
 * client's, else a new one) and a status. Called on an input the translation has accepted.
 */
export function inputItems(input: unknown): Json[] {
  if (typeof input === 'string')
    return [
      {
        id: newId('msg'),
        type: 'message',
        role: 'user',
        content: [text('user', input)],
        status: 'completed',
      },
    ];
  if (!Array.isArray(input)) return [];
  return input.filter(isObject).map((item): Json => {
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    const id = typeof item.id === 'string' && item.id !== '' ? item.id : null;
    switch (type) {
      case 'message': {
        const role = String(item.role);
        const content = typeof item.content === 'string' ? [text(role, item.content)] : item.content;
        return { id: id ?? newId('msg'), type, role, content, status: 'completed' };
      }
      case 'function_call':
        return {
          id: id ?? newId('fc'),
          type,
          status: 'completed',
          call_id: item.call_id,
          name: item.name,
          arguments: typeof item.arguments === 'string' ? item.arguments : '',
        };
      case 'function_call_output':
        return {
          id: id ?? newId('fco'),
          type,
          status: 'completed',
          call_id: item.call_id,
          output: item.output,
        };
      default:
        // what the translation passes over (`reasoning`): listed as it came
        return { ...item, id: id ?? newId('item') };
    }
  });
}
