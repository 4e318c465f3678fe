import { AppError } from '@platform/kernel';
import { chatRequestOfMessages, refuseUnsupportedMessages } from './anthropic-messages-request';

const issuesOf = (fn: () => unknown): Array<{ field: string; message: string }> => {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError)
      return (err.details?.issues ?? []) as Array<{ field: string; message: string }>;
    throw err;
  }
  throw new Error('expected a refusal');
};

describe("Anthropic's Messages request in chat terms", () => {
  it('a Claude Code turn: system blocks, tool results first, their images after, signed thinking kept, is_error said', () => {
    const chat = chatRequestOfMessages({
      model: 'sim/gpt',
      max_tokens: 1024,
      stream: true,
      system: [
        { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Be concise.' },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Read the screenshot and list files' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'I should call both tools', signature: 'sig' },
            // the gateway's own, from a model that is not Anthropic's: nothing any model could check
            { type: 'thinking', thinking: 'unsigned', signature: '' },
            { type: 'text', text: 'Reading.' },
            { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'shot.png' } },
            { type: 'tool_use', id: 'toolu_2', name: 'Bash', input: { command: 'ls' } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_1',
              content: [
                { type: 'text', text: 'an image' },
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR' } },
              ],
            },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'ls: denied', is_error: true },
            { type: 'text', text: 'Go on', cache_control: { type: 'ephemeral' } },
          ],
        },
      ],
      tools: [
        { name: 'Read', description: 'Reads a file', input_schema: { type: 'object', properties: {} } },
      ],
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      metadata: { user_id: 'session-1' },
    });
    expect(chat).toEqual({
      model: 'sim/gpt',
      stream: true,
      max_completion_tokens: 1024,
      user: 'session-1',
      messages: [
        // the breakpoint ends a system message: the Anthropic adapter cuts its system blocks there (0113)
        { role: 'system', content: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
        { role: 'system', content: 'Be concise.' },
        { role: 'user', content: 'Read the screenshot and list files' },
        {
          role: 'assistant',
          content: 'Reading.',
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'Read', arguments: '{"path":"shot.png"}' } },
            { id: 'toolu_2', type: 'function', function: { name: 'Bash', arguments: '{"command":"ls"}' } },
          ],
          thinking_blocks: [{ type: 'thinking', thinking: 'I should call both tools', signature: 'sig' }],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'an image' },
        { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: ls: denied' },
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR' } },
            { type: 'text', text: 'Go on', cache_control: { type: 'ephemeral' } },
          ],
        },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'Read',
            description: 'Reads a file',
            parameters: { type: 'object', properties: {} },
          },
        },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: false,
    });
  });

  it('maps tool_choice, stop sequences, an image by URL and structured outputs', () => {
    const tools = [{ name: 'f', input_schema: { type: 'object' } }];
    const messages = [{ role: 'user', content: 'hi' }];
    const choice = (tool_choice: unknown) =>
      chatRequestOfMessages({ messages, tools, tool_choice }).tool_choice;
    expect(choice({ type: 'any' })).toBe('required');
    expect(choice({ type: 'none' })).toBe('none');
    expect(choice({ type: 'tool', name: 'f' })).toEqual({ type: 'function', function: { name: 'f' } });
    // without tools, auto and none say nothing (OpenAI refuses a tool_choice without tools)
    expect(chatRequestOfMessages({ messages, tool_choice: { type: 'auto' } })).not.toHaveProperty(
      'tool_choice',
    );

    const chat = chatRequestOfMessages({
      messages: [
        {
          role: 'user',
          content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }],
        },
      ],
      stop_sequences: ['END', 'STOP'],
      temperature: 0,
      output_config: { format: { type: 'json_schema', schema: { type: 'object' } }, effort: 'high' },
    });
    expect(chat).toMatchObject({
      messages: [
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] },
      ],
      stop: ['END', 'STOP'],
      temperature: 0,
      response_format: { type: 'json_schema', json_schema: { name: 'output', schema: { type: 'object' } } },
    });
  });

  it('refuses server tools, MCP servers and unknown members, naming each; accepts what it ignores', () => {
    expect(
      issuesOf(() =>
        refuseUnsupportedMessages({
          model: 'm',
          mcp_servers: [],
          container: 'c',
          inference_geo: 'eu',
          betas: ['x'],
          tools: [
            { type: 'web_search_20250305', name: 'web_search' },
            { name: 'mine', input_schema: {} },
          ],
        }),
      ).map((i) => i.field),
    ).toEqual(['mcp_servers', 'container', 'inference_geo', 'betas', 'tools.0.type']);
    expect(() =>
      refuseUnsupportedMessages({
        model: 'm',
        max_tokens: 1,
        messages: [],
        top_k: 5,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        service_tier: 'auto',
        speed: 'fast',
        diagnostics: { previous_message_id: null },
        // null is every member's default
        inference_geo: null,
        container: null,
        tools: [{ type: 'custom', name: 'mine', input_schema: {} }],
      }),
    ).not.toThrow();
    // an own member only: the prototype's names are members like any other
    expect(issuesOf(() => refuseUnsupportedMessages(JSON.parse('{"constructor": 1}')))).toEqual([
      { field: 'constructor', message: 'is not supported' },
    ]);
  });

  it('refuses blocks chat cannot carry, naming where they are', () => {
    const issues = issuesOf(() =>
      chatRequestOfMessages({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'x' } },
              { type: 'image', source: { type: 'file', file_id: 'file_1' } },
              { type: 'tool_result', content: 'no id' },
              { type: 'tool_result', tool_use_id: 't', content: [{ type: 'search_result' }] },
            ],
          },
          {
            role: 'assistant',
            content: [{ type: 'server_tool_use', id: 's', name: 'web_search', input: {} }],
          },
        ],
        system: [{ type: 'image' }],
      }),
    );
    expect(issues.map((i) => i.field)).toEqual([
      'system.0',
      'messages.0.content.0.type',
      'messages.0.content.1.source',
      'messages.0.content.2.tool_use_id',
      // a result answers an earlier tool use
      'messages.0.content.3.tool_use_id',
      'messages.0.content.3.content.0.type',
      'messages.1.content.0.type',
    ]);
  });

  describe('prompt-cache breakpoints (decision 0113)', () => {
    const ephemeral = { type: 'ephemeral' };
    const hour = { type: 'ephemeral', ttl: '1h' };

    it('keeps them on system stretches, a text part and tools', () => {
      const chat = chatRequestOfMessages({
        system: [
          { type: 'text', text: 'Header' },
          { type: 'text', text: 'You are Claude Code.', cache_control: hour },
          { type: 'text', text: 'Long instructions', cache_control: ephemeral },
          { type: 'text', text: 'Today is Friday.' },
        ],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'List files', cache_control: ephemeral }] },
        ],
        tools: [{ name: 'Bash', input_schema: { type: 'object' }, cache_control: hour }],
      });
      expect(chat.messages).toEqual([
        { role: 'system', content: 'Header\n\nYou are Claude Code.', cache_control: hour },
        { role: 'system', content: 'Long instructions', cache_control: ephemeral },
        { role: 'system', content: 'Today is Friday.' },
        // a single text part is a string: its breakpoint is the message's
        { role: 'user', content: 'List files', cache_control: ephemeral },
      ]);
      expect(chat.tools).toEqual([
        {
          type: 'function',
          function: { name: 'Bash', parameters: { type: 'object' } },
          cache_control: hour,
        },
      ]);
    });

    it('keeps them on an assistant turn, a tool result (or its content) and an image', () => {
      const chat = chatRequestOfMessages({
        messages: [
          { role: 'user', content: 'List files' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Listing.' },
              { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: {}, cache_control: ephemeral },
            ],
          },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_1',
                content: [{ type: 'text', text: 'a.txt', cache_control: ephemeral }],
              },
              {
                type: 'image',
                source: { type: 'url', url: 'https://example.com/a.png' },
                cache_control: ephemeral,
              },
              { type: 'text', text: 'And now?' },
            ],
          },
        ],
      });
      expect(chat.messages).toEqual([
        { role: 'user', content: 'List files' },
        // chat's assistant message has one breakpoint, after its last block
        {
          role: 'assistant',
          content: 'Listing.',
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'Bash', arguments: '{}' } }],
          cache_control: ephemeral,
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'a.txt', cache_control: ephemeral },
        {
          role: 'user',
          content: [
            {
              type: 'image_url',
              image_url: { url: 'https://example.com/a.png' },
              cache_control: ephemeral,
            },
            { type: 'text', text: 'And now?' },
          ],
        },
      ]);
    });

    it("puts the request's own (automatic caching) on the last message; null is none", () => {
      const chat = chatRequestOfMessages({
        cache_control: ephemeral,
        system: [{ type: 'text', text: 'Be brief.', cache_control: null }],
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello' },
          { role: 'user', content: [{ type: 'text', text: 'Bye', cache_control: null }] },
        ],
      });
      expect(chat.messages).toEqual([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello' },
        { role: 'user', content: 'Bye', cache_control: ephemeral },
      ]);
    });

    it('refuses a breakpoint of another shape and a fifth one, naming them', () => {
      const issues = issuesOf(() =>
        chatRequestOfMessages({
          system: [{ type: 'text', text: 'S', cache_control: { type: 'persistent' } }],
          messages: [
            {
              role: 'user',
              content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral', ttl: '2h' } }],
            },
          ],
          tools: [{ name: 'f', input_schema: {}, cache_control: { type: 'ephemeral', scope: 'org' } }],
          cache_control: 'yes',
        }),
      );
      expect(issues.map((i) => i.field)).toEqual([
        'system.0.cache_control',
        'messages.0.content.0.cache_control',
        'tools.0.cache_control',
        'cache_control',
      ]);
      expect(issues[1]!.message).toMatch(/'5m' or '1h'/);

      const five = issuesOf(() =>
        chatRequestOfMessages({
          tools: [{ name: 'f', input_schema: {}, cache_control: ephemeral }],
          system: [{ type: 'text', text: 'S', cache_control: ephemeral }],
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'a', cache_control: ephemeral },
                { type: 'text', text: 'b', cache_control: ephemeral },
              ],
            },
          ],
          cache_control: ephemeral,
        }),
      );
      expect(five).toEqual([{ field: 'cache_control', message: expect.stringMatching(/at most 4/) }]);
    });
  });
});
