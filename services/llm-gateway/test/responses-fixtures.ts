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

/**
 * The chat messages an OpenAI-protocol provider is sent on the second turn of the Paris weather round trip: the
 * question, the simulator's call of `get_weather`, and the tool's answer.
 */
export const PARIS_WEATHER_ROUND_TRIP = [
  { role: 'user', content: 'What is the weather in Paris? Use the tool.' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      {
        id: expect.stringMatching(/^call_sim/),
        type: 'function',
        function: { name: 'get_weather', arguments: expect.any(String) },
      },
    ],
  },
  { role: 'tool', tool_call_id: expect.stringMatching(/^call_sim/), content: 'Sunny, 21 C' },
];
