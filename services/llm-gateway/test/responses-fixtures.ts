/** A strict function tool of the Responses API, as the official SDK's users write one. */
export const WEATHER = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
};
