import { clearOfMinuteEnd } from '@platform/testkit';
import { APIError } from 'openai';
import type { ConversationItem } from 'openai/resources/conversations/items';
import { WEATHER } from './responses-fixtures';
import {
  announceOrgDeleted,
  announceUserDeleted,
  aroundOwner,
  type Caller,
  DAY_MS,
  expectNotFoundWith,
  failure,
  orgKey as keyOf,
  sentMessages as sentTo,
  storedInput,
  untilGone,
} from './stored-fixtures';
import { clockAhead, type GatewayWorld, type Reply, sseEvents, startGatewayWorld } from './support';

const MAX_ITEMS = 12;

/**
 * OpenAI's Conversations API as a user of the official `openai` SDK meets it through the edge (decision 0110):
 * `conversations.*`, `conversations.items.*`, and `responses.create({conversation})`, whose turns the
 * conversation keeps; a conversation is its maker's alone, bounded, and goes with its retention, its organization
 * or its user.
 */
describe('conversations through the edge', () => {
  let w: GatewayWorld;
  let owner: { userId: string; token: string };
  /** the platform's clock: a test moves it days ahead, and it is back at the system's after each */
  const time = clockAhead();

  beforeAll(async () => {
    w = await startGatewayWorld({
      clock: time.clock,
      env: { LLM_GATEWAY_CONVERSATIONS_MAX_ITEMS: String(MAX_ITEMS) },
    });
    ({ owner } = await w.org('conversations'));
  });
  afterAll(() => w?.stop());
  afterEach(() => {
    time.ahead = 0;
    w.sim.reset();
  });

  const expectError = async (call: Promise<unknown>, status: number, code: string) => {
    const err = await failure(call);
    expect(err).toBeInstanceOf(APIError);
    expect({ status: (err as APIError).status, error: (err as APIError).error }).toEqual({
      status,
      error: code,
    });
  };
  const expectNotFound = expectNotFoundWith('CONVERSATION_NOT_FOUND');
  const sentMessages = () => sentTo(w);
  const allItems = async (as: Caller, id: string) => {
    const items: ConversationItem[] = [];
    for await (const item of w.client(as).conversations.items.list(id, { order: 'asc' })) items.push(item);
    return items;
  };
  const text = (item: ConversationItem) => {
    const content = (item as { content?: Array<{ text?: string }> }).content;
    return content?.map((part) => part.text).join('');
  };
  const orgKey = (as: Caller, slug: string) => keyOf(w, as, slug);

  it('creates a conversation with items and metadata, reads it, updates its metadata, deletes it', async () => {
    const client = w.client({ bearer: owner.token });
    const conversation = await client.conversations.create({
      metadata: { topic: 'weather' },
      items: [
        { type: 'message', role: 'developer', content: 'Use metric units' },
        { role: 'user', content: [{ type: 'input_text', text: 'Hello' }] },
      ],
    });
    expect(conversation).toEqual({
      id: expect.stringMatching(/^conv_/),
      object: 'conversation',
      created_at: expect.any(Number),
      metadata: { topic: 'weather' },
    });
    expect(Math.abs(conversation.created_at - Date.now() / 1000)).toBeLessThan(60);
    expect(await client.conversations.retrieve(conversation.id)).toEqual(conversation);

    const updated = await client.conversations.update(conversation.id, {
      metadata: { topic: 'rain', n: '2' },
    });
    expect(updated).toEqual({ ...conversation, metadata: { topic: 'rain', n: '2' } });
    expect((await client.conversations.retrieve(conversation.id)).metadata).toEqual({
      topic: 'rain',
      n: '2',
    });

    expect(await allItems({ bearer: owner.token }, conversation.id)).toEqual([
      storedInput('developer', 'Use metric units'),
      storedInput('user', 'Hello'),
    ]);
    // without anything: an empty conversation, metadata {}
    const empty = await client.conversations.create();
    expect(empty.metadata).toEqual({});
    expect(await allItems({ bearer: owner.token }, empty.id)).toEqual([]);

    expect(await client.conversations.delete(conversation.id)).toEqual({
      id: conversation.id,
      object: 'conversation.deleted',
      deleted: true,
    });
    await expectNotFound(client.conversations.retrieve(conversation.id));
    await expectNotFound(client.conversations.delete(conversation.id));
    await expectNotFound(client.conversations.update(conversation.id, { metadata: {} }));
    await expectNotFound(client.conversations.items.list(conversation.id));
    await expectNotFound(
      client.conversations.items.create(conversation.id, { items: [{ role: 'user', content: 'x' }] }),
    );
    await expectNotFound(
      client.responses.create({ model: 'mock/chat', input: 'hi', conversation: conversation.id }),
    );
  });

  it('items: added (with their ids), listed in pages both ways, read and deleted one by one', async () => {
    const as = { bearer: owner.token };
    const client = w.client(as);
    const { id } = await client.conversations.create({ items: [{ role: 'user', content: 'one' }] });
    const added = await client.conversations.items.create(id, {
      items: [
        { type: 'message', role: 'assistant', content: 'two' },
        { id: 'msg_mine', role: 'user', content: 'three' },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'Snow' },
      ],
    });
    expect(added).toMatchObject({ object: 'list', has_more: false });
    expect(added.data.map((i) => i.type)).toEqual([
      'message',
      'message',
      'function_call',
      'function_call_output',
    ]);
    expect(added.data[1]!.id).toBe('msg_mine');
    expect(added.data[2]).toEqual({
      id: expect.stringMatching(/^fc_/),
      type: 'function_call',
      status: 'completed',
      call_id: 'call_1',
      name: 'get_weather',
      arguments: '{"city":"Oslo"}',
    });
    expect(added.data[3]).toEqual({
      id: expect.stringMatching(/^fco_/),
      type: 'function_call_output',
      status: 'completed',
      call_id: 'call_1',
      output: 'Snow',
    });
    expect(added.first_id).toBe(added.data[0]!.id);
    expect(added.last_id).toBe(added.data[3]!.id);

    const asc = await allItems(as, id);
    expect(asc.map((i) => text(i) ?? i.type)).toEqual([
      'one',
      'two',
      'three',
      'function_call',
      'function_call_output',
    ]);
    // the SDK's pages of two, newest first (OpenAI's default order)
    const desc: ConversationItem[] = [];
    let pages = 0;
    for await (const page of (await client.conversations.items.list(id, { limit: 2 })).iterPages()) {
      pages++;
      desc.push(...page.data);
    }
    expect(pages).toBe(3);
    expect(desc.map((i) => i.id)).toEqual([...asc].reverse().map((i) => i.id));
    const raw = await w.call(
      'gateway',
      'GET',
      `/v1/conversations/${id}/items?order=asc&limit=2&after=${asc[1]!.id}`,
      as,
    );
    expect(raw.body).toEqual({
      object: 'list',
      data: [asc[2], asc[3]],
      first_id: asc[2]!.id,
      last_id: asc[3]!.id,
      has_more: true,
    });
    const last = await w.call('gateway', 'GET', `/v1/conversations/${id}/items?after=${asc[0]!.id}`, as);
    expect(last.body).toMatchObject({ data: [], first_id: null, last_id: null, has_more: false });

    expect(await client.conversations.items.retrieve('msg_mine', { conversation_id: id })).toEqual(asc[2]);
    const after = await client.conversations.items.delete('msg_mine', { conversation_id: id });
    expect(after).toMatchObject({ id, object: 'conversation' });
    expect((await allItems(as, id)).map((i) => i.id)).toEqual(
      [asc[0], asc[1], asc[3], asc[4]].map((i) => i!.id),
    );
    for (const call of [
      client.conversations.items.retrieve('msg_mine', { conversation_id: id }),
      client.conversations.items.delete('msg_mine', { conversation_id: id }),
    ])
      await expectError(call, 404, 'CONVERSATION_ITEM_NOT_FOUND');
    // the only item of its batch
    await client.conversations.items.delete(String(asc[0]!.id), { conversation_id: id });
    expect((await allItems(as, id)).map((i) => i.id)).toEqual([asc[1], asc[3], asc[4]].map((i) => i!.id));
  });

  it('a response in a conversation comes after its items, and adds its turn; the next turn sees it', async () => {
    const client = w.client({ bearer: owner.token });
    const { id } = await client.conversations.create({
      items: [{ role: 'developer', content: 'You are terse' }],
    });
    const first = await client.responses.create({
      model: 'sim/gpt',
      instructions: 'Be brief',
      input: 'My name is Ada',
      conversation: id,
    });
    expect(first).toMatchObject({ status: 'completed', conversation: { id }, previous_response_id: null });
    expect(sentMessages()).toEqual([
      { role: 'system', content: 'Be brief' },
      { role: 'developer', content: 'You are terse' },
      { role: 'user', content: 'My name is Ada' },
    ]);
    const second = await client.responses.create({
      model: 'sim/gpt',
      input: 'What is my name?',
      conversation: { id },
    });
    expect(second.conversation).toEqual({ id });
    // the first turn's input and output, not its instructions
    expect(sentMessages()).toEqual([
      { role: 'developer', content: 'You are terse' },
      { role: 'user', content: 'My name is Ada' },
      { role: 'assistant', content: first.output_text },
      { role: 'user', content: 'What is my name?' },
    ]);
    const items = await allItems({ bearer: owner.token }, id);
    expect(items.map((i) => [i.type, (i as { role?: string }).role, text(i)])).toEqual([
      ['message', 'developer', 'You are terse'],
      ['message', 'user', 'My name is Ada'],
      ['message', 'assistant', first.output_text],
      ['message', 'user', 'What is my name?'],
      ['message', 'assistant', second.output_text],
    ]);
    // the output items are the response's own, ids included; the response is stored as well
    expect(items[2]).toEqual(first.output[0]);
    expect(await client.responses.retrieve(second.id)).toEqual(second);
    expect((await client.responses.inputItems.list(second.id)).data.map((i) => i.id)).toEqual([items[3]!.id]);
  });

  it('a function call made in one turn is answered in the next, and the call is kept in the conversation', async () => {
    const client = w.client({ bearer: owner.token });
    const { id } = await client.conversations.create();
    const ask = 'What is the weather in Paris? Use the tool.';
    const first = await client.responses.create({
      model: 'sim/gpt',
      input: ask,
      tools: [WEATHER],
      conversation: id,
    });
    const call = first.output.find((item) => item.type === 'function_call') as {
      call_id: string;
      id: string;
    };
    const second = await client.responses.create({
      model: 'sim/gpt',
      tools: [WEATHER],
      conversation: id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'Sunny, 21 C' }],
    });
    expect(second.status).toBe('completed');
    expect(sentMessages()).toEqual([
      { role: 'user', content: ask },
      expect.objectContaining({
        role: 'assistant',
        tool_calls: [expect.objectContaining({ id: call.call_id })],
      }),
      { role: 'tool', tool_call_id: call.call_id, content: 'Sunny, 21 C' },
    ]);
    expect((await client.conversations.items.retrieve(call.id, { conversation_id: id })).type).toBe(
      'function_call',
    );
  });

  it('a stream in a conversation: every response object names it, and its turn is added at its end', async () => {
    const as = { bearer: owner.token };
    const client = w.client(as);
    const { id } = await client.conversations.create({ items: [{ role: 'user', content: 'Remember: 42' }] });
    const raw = await w.call('gateway', 'POST', '/v1/responses', as, {
      model: 'sim/gpt',
      input: 'Stream a few words',
      conversation: id,
      stream: true,
    });
    const seen = sseEvents(raw.body as string);
    const withResponse = seen.filter((e) => e.data.response);
    expect(withResponse.map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.completed',
    ]);
    for (const e of withResponse) expect(e.data.response.conversation).toEqual({ id });
    expect(sentMessages()).toEqual([
      { role: 'user', content: 'Remember: 42' },
      { role: 'user', content: 'Stream a few words' },
    ]);
    const final = withResponse.at(-1)!.data.response;

    const next = await client.responses
      .stream({ model: 'sim/gpt', input: 'More', conversation: id })
      .finalResponse();
    expect(next.conversation).toEqual({ id });
    expect(sentMessages()).toEqual([
      { role: 'user', content: 'Remember: 42' },
      { role: 'user', content: 'Stream a few words' },
      { role: 'assistant', content: final.output[0].content[0].text },
      { role: 'user', content: 'More' },
    ]);
    expect((await allItems(as, id)).map(text)).toEqual([
      'Remember: 42',
      'Stream a few words',
      final.output[0].content[0].text,
      'More',
      next.output_text,
    ]);
  });

  it('two responses at once on one conversation: both turns are kept, each whole', async () => {
    const as = { bearer: owner.token };
    const client = w.client(as);
    const { id } = await client.conversations.create();
    const [a, b] = await Promise.all(
      ['first question', 'second question'].map((input) =>
        client.responses.create({ model: 'mock/chat', input, conversation: id }),
      ),
    );
    const texts = (await allItems(as, id)).map(text);
    expect(texts).toHaveLength(4);
    const turnOf = (r: typeof a, input: string) => [input, r!.output_text];
    // in either order, never interleaved
    expect([
      [...turnOf(a, 'first question'), ...turnOf(b, 'second question')],
      [...turnOf(b, 'second question'), ...turnOf(a, 'first question')],
    ]).toContainEqual(texts);
  });

  it('store: false keeps the turn in the conversation, not the response; a failed response adds nothing', async () => {
    const as = { bearer: owner.token };
    const client = w.client(as);
    const { id } = await client.conversations.create();
    const unstored = await client.responses.create({
      model: 'mock/chat',
      input: 'kept',
      conversation: id,
      store: false,
    });
    expect(unstored).toMatchObject({ store: false, conversation: { id } });
    await expectError(client.responses.retrieve(unstored.id), 404, 'RESPONSE_NOT_FOUND');
    expect((await allItems(as, id)).map(text)).toEqual(['kept', unstored.output_text]);
    // the provider refuses it: nothing of the request is added
    w.sim.script([{ match: { model: 'gpt-sim' }, error: { status: 400 } }]);
    await expectError(
      client.responses.create({ model: 'sim/gpt', input: 'lost', conversation: id }),
      502,
      'PROVIDER_ERROR',
    );
    await expectError(
      client.responses.create({ model: 'no/such-model', input: 'lost', conversation: id }),
      404,
      'MODEL_NOT_FOUND',
    );
    expect((await allItems(as, id)).map(text)).toEqual(['kept', unstored.output_text]);
  });

  it('conversation with previous_response_id is a 400 before any provider call', async () => {
    const client = w.client({ bearer: owner.token });
    const { id } = await client.conversations.create();
    const earlier = await client.responses.create({ model: 'mock/chat', input: 'hi' });
    const before = w.sim.requests().length;
    const res = await w.call(
      'gateway',
      'POST',
      '/v1/responses',
      { bearer: owner.token },
      { model: 'sim/gpt', input: 'hi', conversation: id, previous_response_id: earlier.id },
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'INVALID_BODY',
      details: {
        issues: [{ field: 'conversation', message: expect.stringContaining('previous_response_id') }],
      },
    });
    await expectError(
      client.responses.create({
        model: 'sim/gpt',
        input: 'hi',
        conversation: id,
        previous_response_id: earlier.id,
      }),
      400,
      'INVALID_BODY',
    );
    expect(w.sim.requests().length).toBe(before);
    expect(await allItems({ bearer: owner.token }, id)).toEqual([]);
  });

  it("a conversation is its maker's: another member, an org API key, another organization get the unknown id's 404", async () => {
    const mine = await w.client({ bearer: owner.token }).conversations.create({
      items: [{ role: 'user', content: 'secret' }],
    });
    const [item] = await allItems({ bearer: owner.token }, mine.id);
    const { sameUser, key, strangers } = await aroundOwner(w, owner, 'conversations');
    // the owner's access token is the same user
    expect((await w.client(sameUser).conversations.retrieve(mine.id)).id).toBe(mine.id);
    const before = w.sim.requests().length;
    for (const as of strangers) {
      const client = w.client(as);
      // each may use the API: only the owner's conversation is out of reach
      expect((await client.conversations.create()).id).toMatch(/^conv_/);
      await expectNotFound(client.conversations.retrieve(mine.id));
      await expectNotFound(client.conversations.update(mine.id, { metadata: { x: 'y' } }));
      await expectNotFound(client.conversations.items.list(mine.id));
      await expectNotFound(
        client.conversations.items.create(mine.id, { items: [{ role: 'user', content: 'x' }] }),
      );
      // an id it guesses is no key to the item either, nor to learn that it exists
      await expectNotFound(
        client.conversations.items.create(mine.id, { items: [{ id: item!.id, role: 'user', content: 'x' }] }),
      );
      await expectNotFound(
        client.conversations.items.retrieve(String(item!.id), { conversation_id: mine.id }),
      );
      await expectNotFound(client.conversations.items.delete(String(item!.id), { conversation_id: mine.id }));
      await expectNotFound(client.conversations.delete(mine.id));
      await expectNotFound(
        client.responses.create({ model: 'sim/gpt', input: 'steal', conversation: mine.id }),
      );
    }
    expect(w.sim.requests().length).toBe(before);
    // an organization API key's conversations are the key's: the org's owner cannot read them
    const keys = await w.client({ apiKey: key }).conversations.create();
    expect((await w.client({ apiKey: key }).conversations.retrieve(keys.id)).id).toBe(keys.id);
    await expectNotFound(w.client({ bearer: owner.token }).conversations.retrieve(keys.id));
    expect((await allItems({ bearer: owner.token }, mine.id)).map(text)).toEqual(['secret']);
  });

  it('a conversation holds at most its bound of items: adding more is a 400, a response before any provider call', async () => {
    const as = { bearer: owner.token };
    const client = w.client(as);
    const eight = Array.from({ length: 8 }, (_, i) => ({ role: 'user' as const, content: `item ${i}` }));
    const { id } = await client.conversations.create({ items: eight });
    await expectError(
      client.conversations.items.create(id, { items: eight.slice(0, MAX_ITEMS - 8 + 1) }),
      400,
      'CONVERSATION_TOO_LONG',
    );
    const res = await w.call('gateway', 'POST', `/v1/conversations/${id}/items`, as, {
      items: eight.slice(0, 5),
    });
    expect(res.body).toMatchObject({
      code: 'CONVERSATION_TOO_LONG',
      details: { limit: MAX_ITEMS, items: 13 },
    });
    await client.conversations.items.create(id, { items: eight.slice(0, 3) });
    // 11 items: a response's input still fits (its output is added whatever the bound says)
    await client.responses.create({ model: 'mock/chat', input: 'last one', conversation: id });
    expect(await allItems(as, id)).toHaveLength(13);
    const before = w.sim.requests().length;
    await expectError(
      client.responses.create({ model: 'sim/gpt', input: 'one too many', conversation: id }),
      400,
      'CONVERSATION_TOO_LONG',
    );
    expect(w.sim.requests().length).toBe(before);
    // deleting items makes room again
    const [first, second] = await allItems(as, id);
    await client.conversations.items.delete(String(first!.id), { conversation_id: id });
    await client.conversations.items.delete(String(second!.id), { conversation_id: id });
    await client.conversations.items.create(id, { items: eight.slice(0, 1) });
    // a new conversation too, within OpenAI's 20 items at a time
    await expectError(
      client.conversations.create({ items: [...eight, ...eight].slice(0, MAX_ITEMS + 1) }),
      400,
      'CONVERSATION_TOO_LONG',
    );
  });

  it('answers bad input with a 4xx envelope, never a 500', async () => {
    const as = { bearer: owner.token };
    const { id } = await w.client(as).conversations.create({ items: [{ role: 'user', content: 'hi' }] });
    const [item] = await allItems(as, id);
    const long = 'c'.repeat(5_000);
    const cases: Array<[string, string, unknown, number, string]> = [
      ['GET', `/v1/conversations/${long}`, undefined, 404, 'CONVERSATION_NOT_FOUND'],
      ['POST', `/v1/conversations/${long}`, { metadata: {} }, 404, 'CONVERSATION_NOT_FOUND'],
      ['DELETE', `/v1/conversations/${long}`, undefined, 404, 'CONVERSATION_NOT_FOUND'],
      ['GET', `/v1/conversations/${long}/items`, undefined, 404, 'CONVERSATION_NOT_FOUND'],
      ['GET', `/v1/conversations/${id}/items/${long}`, undefined, 404, 'CONVERSATION_ITEM_NOT_FOUND'],
      ['DELETE', `/v1/conversations/${id}/items/${long}`, undefined, 404, 'CONVERSATION_ITEM_NOT_FOUND'],
      ['POST', '/v1/responses', { model: 'mock/chat', input: 'x', conversation: long }, 400, 'INVALID_BODY'],
      [
        'POST',
        '/v1/responses',
        { model: 'mock/chat', input: 'x', conversation: 'conv_none' },
        404,
        'CONVERSATION_NOT_FOUND',
      ],
      [
        'POST',
        '/v1/responses',
        { model: 'mock/chat', input: 'x', conversation: { id: 3 } },
        400,
        'INVALID_BODY',
      ],
      [
        'POST',
        '/v1/responses',
        { model: 'mock/chat', input: 'x', conversation: { id, more: 1 } },
        400,
        'INVALID_BODY',
      ],
      ['POST', '/v1/conversations', { metadata: 'topic' }, 400, 'INVALID_BODY'],
      ['POST', '/v1/conversations', { metadata: { ['k'.repeat(65)]: 'v' } }, 400, 'INVALID_BODY'],
      ['POST', '/v1/conversations', { metadata: { k: 'v'.repeat(513) } }, 400, 'INVALID_BODY'],
      [
        'POST',
        '/v1/conversations',
        { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
        400,
        'INVALID_BODY',
      ],
      ['POST', '/v1/conversations', { items: 'hello' }, 400, 'INVALID_BODY'],
      [
        'POST',
        '/v1/conversations',
        { items: Array.from({ length: 21 }, () => ({ role: 'user', content: 'x' })) },
        400,
        'INVALID_BODY',
      ],
      ['POST', '/v1/conversations', { title: 'unknown member' }, 400, 'INVALID_BODY'],
      ['POST', '/v1/conversations', [1, 2], 400, 'INVALID_BODY'],
      [
        'POST',
        '/v1/conversations',
        { items: [{ type: 'item_reference', id: 'msg_1' }] },
        400,
        'INVALID_BODY',
      ],
      ['POST', '/v1/conversations', { items: [{ role: 'wizard', content: 'x' }] }, 400, 'INVALID_BODY'],
      ['POST', '/v1/conversations', { items: [{ role: 'user', content: 3 }] }, 400, 'INVALID_BODY'],
      [
        'POST',
        '/v1/conversations',
        { items: [{ id: long, role: 'user', content: 'x' }] },
        400,
        'INVALID_BODY',
      ],
      [
        'POST',
        '/v1/conversations',
        {
          items: [
            { id: 'msg_twice', role: 'user', content: 'x' },
            { id: 'msg_twice', role: 'user', content: 'y' },
          ],
        },
        400,
        'INVALID_BODY',
      ],
      ['POST', `/v1/conversations/${id}`, {}, 400, 'INVALID_BODY'],
      ['POST', `/v1/conversations/${id}`, { metadata: {}, items: [] }, 400, 'INVALID_BODY'],
      ['POST', `/v1/conversations/${id}/items`, {}, 400, 'INVALID_BODY'],
      ['POST', `/v1/conversations/${id}/items`, { items: [] }, 400, 'INVALID_BODY'],
      [
        'POST',
        `/v1/conversations/${id}/items`,
        { items: [{ id: item!.id, role: 'user', content: 'x' }] },
        400,
        'INVALID_BODY',
      ],
      [
        'POST',
        `/v1/conversations/${id}/items`,
        { items: [{ type: 'function_call_output', call_id: 'call_nobody_made', output: 'x' }] },
        400,
        'INVALID_BODY',
      ],
      [
        'POST',
        '/v1/responses',
        { model: 'mock/chat', input: [{ id: item!.id, role: 'user', content: 'again' }], conversation: id },
        400,
        'INVALID_BODY',
      ],
      ['GET', '/v1/conversations', undefined, 405, 'METHOD_NOT_ALLOWED'],
      ['PUT', `/v1/conversations/${id}`, { metadata: {} }, 405, 'METHOD_NOT_ALLOWED'],
      ['PATCH', `/v1/conversations/${id}/items/${item!.id}`, {}, 405, 'METHOD_NOT_ALLOWED'],
      ...['limit=0', 'limit=101', 'limit=ten', 'order=up', 'after=msg_unknown', `after=${long}`].map(
        (query): [string, string, unknown, number, string] => [
          'GET',
          `/v1/conversations/${id}/items?${query}`,
          undefined,
          400,
          'INVALID_BODY',
        ],
      ),
    ];
    const before = w.sim.requests().length;
    for (const [method, path, body, status, code] of cases) {
      const res: Reply = await w.call('gateway', method, path, as, body);
      expect({ method, path: path.slice(0, 80), status: res.status, code: res.body?.code }).toEqual({
        method,
        path: path.slice(0, 80),
        status,
        code,
      });
      expect(res.body.requestId).toBe(res.headers.get('x-request-id'));
    }
    expect(w.sim.requests().length).toBe(before);
    // nothing of that changed the conversation
    expect((await allItems(as, id)).map((i) => i.id)).toEqual([item!.id]);
  });

  it('a conversation goes at the end of its retention (30 days after its last change)', async () => {
    // an organization API key does not expire with the clock, as a session does
    const key = await orgKey({ bearer: owner.token }, 'conversations');
    const client = w.client({ apiKey: key });
    const old = await client.conversations.create({ items: [{ role: 'user', content: 'old' }] });
    const used = await client.conversations.create({ items: [{ role: 'user', content: 'first' }] });
    time.ahead = 20 * DAY_MS;
    await client.responses.create({ model: 'mock/chat', input: 'twenty days later', conversation: used.id });
    time.ahead = 31 * DAY_MS;
    await expectNotFound(client.conversations.retrieve(old.id));
    // the turn 20 days in gave the conversation and its first items 30 more days
    expect((await allItems({ apiKey: key }, used.id)).map(text)[0]).toBe('first');
    time.ahead = 51 * DAY_MS;
    await expectNotFound(client.conversations.retrieve(used.id));
  });

  it("an organization's deletion, and a user's, remove their conversations", async () => {
    const { owner: doomed } = await w.org('conversations-doomed');
    const kept = await w.client({ bearer: owner.token }).conversations.create();
    const gone = await w.client({ bearer: doomed.token }).conversations.create({
      items: [{ role: 'user', content: 'bye' }],
    });
    await announceOrgDeleted(w, 'conversations-doomed');
    await untilGone(w, `/v1/conversations/${gone.id}`, { bearer: doomed.token });

    const { owner: leaving } = await w.org('conversations-leaving');
    const theirs = await w.client({ bearer: leaving.token }).conversations.create();
    await announceUserDeleted(w, leaving.userId);
    await untilGone(w, `/v1/conversations/${theirs.id}`, { bearer: leaving.token });
    expect((await w.client({ bearer: owner.token }).conversations.retrieve(kept.id)).id).toBe(kept.id);
  });

  it('only a response is billed: conversations and their items are not', async () => {
    const { owner: billed } = await w.org('conversations-billed');
    const as = { bearer: billed.token };
    const client = w.client(as);
    // the requests and the usage read in one calendar minute: the minute's gauge is the count of requests
    await clearOfMinuteEnd(15_000);
    const { id } = await client.conversations.create({ items: [{ role: 'user', content: 'one' }] });
    await client.conversations.update(id, { metadata: { a: 'b' } });
    await client.conversations.items.create(id, { items: [{ role: 'user', content: 'two' }] });
    await client.responses.create({ model: 'mock/chat', input: 'three', conversation: id });
    await client.conversations.items.list(id);
    await client.conversations.retrieve(id);
    await client.conversations.delete(id);
    const usage = await w.counted('conversations-billed', as, { requests: 1 });
    expect(usage.body.enforced.find((g: { key: string }) => g.key === 'llm.rpm').used).toBe(1);
  });
});
