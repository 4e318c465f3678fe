import { clearOfMinuteEnd } from '@platform/testkit';
import { APIError } from 'openai';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
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
import { clockAhead, type GatewayWorld, startGatewayWorld } from './support';

/**
 * Stored responses as a user of the official `openai` SDK meets them through the edge (decision 0108): a chain of
 * turns by `previous_response_id`, function calls answered in a later response, `responses.retrieve`,
 * `.inputItems.list`, `.delete`; a response is its maker's alone, goes at the end of its retention, and with its
 * organization or user.
 */
describe('stored responses through the edge', () => {
  let w: GatewayWorld;
  let owner: { userId: string; token: string };
  /** the platform's clock: a test moves it days ahead, and it is back at the system's after each */
  const time = clockAhead();

  beforeAll(async () => {
    w = await startGatewayWorld({
      clock: time.clock,
      env: { LLM_GATEWAY_RESPONSES_MAX_CHAIN: '4' },
    });
    ({ owner } = await w.org('stored-responses'));
  });
  afterAll(() => w?.stop());
  afterEach(() => {
    time.ahead = 0;
    w.sim.reset();
  });

  const expectNotFound = expectNotFoundWith('RESPONSE_NOT_FOUND');
  const sentMessages = () => sentTo(w);
  const orgKey = (as: Caller, slug: string) => keyOf(w, as, slug);

  it('previous_response_id continues a conversation: the earlier turns come first, not their instructions', async () => {
    const client = w.client({ bearer: owner.token });
    const first = await client.responses.create({
      model: 'sim/gpt',
      instructions: 'Be brief',
      input: 'My name is Ada',
    });
    expect(first).toMatchObject({ store: true, previous_response_id: null });
    const second = await client.responses.create({
      model: 'sim/gpt',
      instructions: 'Answer in French',
      input: 'What is my name?',
      previous_response_id: first.id,
    });
    expect(second).toMatchObject({ status: 'completed', previous_response_id: first.id, store: true });
    expect(sentMessages()).toEqual([
      { role: 'system', content: 'Answer in French' },
      { role: 'user', content: 'My name is Ada' },
      { role: 'assistant', content: first.output_text },
      { role: 'user', content: 'What is my name?' },
    ]);

    // a third turn reads the whole chain; a branch from the first turn reads only the first
    await client.responses.create({ model: 'sim/gpt', input: 'And again?', previous_response_id: second.id });
    expect(sentMessages()).toEqual([
      { role: 'user', content: 'My name is Ada' },
      { role: 'assistant', content: first.output_text },
      { role: 'user', content: 'What is my name?' },
      { role: 'assistant', content: second.output_text },
      { role: 'user', content: 'And again?' },
    ]);
    await client.responses.create({ model: 'mock/chat', input: 'Branch', previous_response_id: first.id });
    const branch = await client.responses.create({
      model: 'sim/gpt',
      input: 'Branch again',
      previous_response_id: first.id,
    });
    expect(sentMessages()).toEqual([
      { role: 'user', content: 'My name is Ada' },
      { role: 'assistant', content: first.output_text },
      { role: 'user', content: 'Branch again' },
    ]);
    expect(branch.previous_response_id).toBe(first.id);
  });

  it('a function call made in one response is answered in the next', async () => {
    const client = w.client({ bearer: owner.token });
    const ask = 'What is the weather in Paris? Use the tool.';
    const first = await client.responses.create({ model: 'sim/gpt', input: ask, tools: [WEATHER] });
    const call = first.output.find((item) => item.type === 'function_call') as { call_id: string };
    expect(call.call_id).toEqual(expect.any(String));
    const second = await client.responses.create({
      model: 'sim/gpt',
      tools: [WEATHER],
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'Sunny, 21 C' }],
    });
    expect(second.status).toBe('completed');
    expect(second.output_text.length).toBeGreaterThan(0);
    expect(sentMessages()).toEqual([
      { role: 'user', content: ask },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: call.call_id,
            type: 'function',
            function: { name: 'get_weather', arguments: expect.any(String) },
          },
        ],
      },
      { role: 'tool', tool_call_id: call.call_id, content: 'Sunny, 21 C' },
    ]);
  });

  it('a streamed response is stored: retrieved as it was answered, and continued', async () => {
    const client = w.client({ bearer: owner.token });
    const raw = await w.call(
      'gateway',
      'POST',
      '/v1/responses',
      { bearer: owner.token },
      { model: 'sim/gpt', input: 'Stream a few words please', metadata: { run: 's' }, stream: true },
    );
    const frames = (raw.body as string).split('\n\n').filter(Boolean);
    const last = JSON.parse(/^data: (.*)$/m.exec(frames.at(-1)!)![1]!);
    expect(last).toMatchObject({
      type: 'response.completed',
      response: { status: 'completed', store: true },
    });
    const final = last.response;
    const retrieved = await w.call('gateway', 'GET', `/v1/responses/${final.id}`, { bearer: owner.token });
    expect(retrieved.status).toBe(200);
    expect(retrieved.body).toEqual(final);
    expect((await client.responses.retrieve(final.id)).output_text).toBe(final.output[0].content[0].text);

    const next = await client.responses
      .stream({ model: 'sim/gpt', input: 'More', previous_response_id: final.id })
      .finalResponse();
    expect(next.previous_response_id).toBe(final.id);
    expect(sentMessages()).toEqual([
      { role: 'user', content: 'Stream a few words please' },
      { role: 'assistant', content: final.output[0].content[0].text },
      { role: 'user', content: 'More' },
    ]);
  });

  it('retrieve, input items (paged, both orders), delete, then 404 everywhere', async () => {
    const client = w.client({ bearer: owner.token });
    const input: ResponseInputItem[] = [
      { role: 'developer', content: 'Use metric units' },
      { role: 'user', content: [{ type: 'input_text', text: 'Weather here?' }] },
      { type: 'message', role: 'assistant', content: 'Where are you?' },
      { role: 'user', content: 'Oslo' },
    ];
    const made = await client.responses.create({ model: 'mock/chat', input });
    expect(await client.responses.retrieve(made.id)).toEqual(made);

    const asc = [];
    for await (const item of client.responses.inputItems.list(made.id, { order: 'asc', limit: 1 }))
      asc.push(item);
    expect(asc).toEqual([
      storedInput('developer', 'Use metric units'),
      storedInput('user', 'Weather here?'),
      {
        id: expect.stringMatching(/^msg_/),
        type: 'message',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Where are you?', annotations: [], logprobs: [] }],
        status: 'completed',
      },
      storedInput('user', 'Oslo'),
    ]);
    // OpenAI's default order is the last item first
    const page = await w.call('gateway', 'GET', `/v1/responses/${made.id}/input_items?limit=3`, {
      bearer: owner.token,
    });
    expect(page.status).toBe(200);
    expect(page.body).toEqual({
      object: 'list',
      data: [...asc].reverse().slice(0, 3),
      first_id: asc[3]!.id,
      last_id: asc[1]!.id,
      has_more: true,
    });
    const rest = await w.call('gateway', 'GET', `/v1/responses/${made.id}/input_items?after=${asc[1]!.id}`, {
      bearer: owner.token,
    });
    expect(rest.body).toMatchObject({ data: [asc[0]], has_more: false });
    for (const query of ['limit=0', 'limit=101', 'order=up', 'after=msg_unknown']) {
      const bad = await w.call('gateway', 'GET', `/v1/responses/${made.id}/input_items?${query}`, {
        bearer: owner.token,
      });
      expect({ query, status: bad.status, code: bad.body.code }).toEqual({
        query,
        status: 400,
        code: 'INVALID_BODY',
      });
    }
    expect(
      (await w.call('gateway', 'GET', `/v1/responses/${made.id}?stream=true`, { bearer: owner.token }))
        .status,
    ).toBe(400);

    const deleted = await w.call('gateway', 'DELETE', `/v1/responses/${made.id}`, { bearer: owner.token });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: made.id, object: 'response', deleted: true });
    await expectNotFound(client.responses.retrieve(made.id));
    await expectNotFound(client.responses.delete(made.id));
    await expectNotFound(client.responses.inputItems.list(made.id));
    const before = w.sim.requests().length;
    const continued = await w.call(
      'gateway',
      'POST',
      '/v1/responses',
      { bearer: owner.token },
      { model: 'sim/gpt', input: 'hi', previous_response_id: made.id },
    );
    expect(continued.status).toBe(404);
    expect(continued.body).toMatchObject({ code: 'RESPONSE_NOT_FOUND', requestId: expect.any(String) });
    await expectNotFound(client.responses.retrieve('resp_never_made'));
    expect(w.sim.requests().length).toBe(before);
  });

  it('a deleted response breaks the chain after it: 404, and its own record stays readable', async () => {
    const client = w.client({ bearer: owner.token });
    const first = await client.responses.create({ model: 'mock/chat', input: 'one' });
    const second = await client.responses.create({
      model: 'mock/chat',
      input: 'two',
      previous_response_id: first.id,
    });
    await client.responses.delete(first.id);
    expect((await client.responses.retrieve(second.id)).id).toBe(second.id);
    await expectNotFound(
      client.responses.create({ model: 'mock/chat', input: 'three', previous_response_id: second.id }),
    );
  });

  it('store: false keeps nothing', async () => {
    const client = w.client({ bearer: owner.token });
    const plain = await client.responses.create({ model: 'mock/chat', input: 'forget me', store: false });
    expect(plain).toMatchObject({ store: false });
    await expectNotFound(client.responses.retrieve(plain.id));
    const streamed = await client.responses
      .stream({ model: 'mock/chat', input: 'forget me too', store: false })
      .finalResponse();
    await expectNotFound(client.responses.retrieve(streamed.id));
    await expectNotFound(
      client.responses.create({ model: 'mock/chat', input: 'next', previous_response_id: plain.id }),
    );
  });

  it("a response is its maker's: another member, an org API key, another organization get the unknown id's 404", async () => {
    const mine = await w
      .client({ bearer: owner.token })
      .responses.create({ model: 'mock/chat', input: 'mine' });
    const { sameUser, key, strangers } = await aroundOwner(w, owner, 'stored-responses');
    // the owner's access token is the same user: it reads
    expect((await w.client(sameUser).responses.retrieve(mine.id)).id).toBe(mine.id);
    for (const as of strangers) {
      const client = w.client(as);
      // each may use the API: only the owner's response is out of reach
      await client.responses.create({ model: 'mock/chat', input: 'hello' });
      await expectNotFound(client.responses.retrieve(mine.id));
      await expectNotFound(client.responses.inputItems.list(mine.id));
      await expectNotFound(client.responses.delete(mine.id));
      await expectNotFound(
        client.responses.create({ model: 'mock/chat', input: 'steal', previous_response_id: mine.id }),
      );
    }
    // an organization API key's responses are the key's: the org's owner cannot read them either
    const keys = await w.client({ apiKey: key }).responses.create({ model: 'mock/chat', input: 'by key' });
    expect((await w.client({ apiKey: key }).responses.retrieve(keys.id)).id).toBe(keys.id);
    await expectNotFound(w.client({ bearer: owner.token }).responses.retrieve(keys.id));
    expect((await w.client({ bearer: owner.token }).responses.retrieve(mine.id)).id).toBe(mine.id);
  });

  it('a chain longer than its bound is a 400 before any provider call', async () => {
    const client = w.client({ bearer: owner.token });
    let previous: string | null = null;
    for (let i = 0; i < 4; i++)
      previous = (
        await client.responses.create({
          model: 'mock/chat',
          input: `turn ${i}`,
          previous_response_id: previous,
        })
      ).id;
    const before = w.sim.requests().length;
    const err = await failure(
      client.responses.create({ model: 'sim/gpt', input: 'one too many', previous_response_id: previous }),
    );
    expect(err).toBeInstanceOf(APIError);
    expect({ status: (err as APIError).status, error: (err as APIError).error }).toEqual({
      status: 400,
      error: 'RESPONSE_CHAIN_TOO_LONG',
    });
    expect(w.sim.requests().length).toBe(before);
  });

  it('a response goes at the end of its retention (30 days after the last turn of its chain)', async () => {
    // an organization API key does not expire with the clock, as a session does
    const key = await orgKey({ bearer: owner.token }, 'stored-responses');
    const client = w.client({ apiKey: key });
    const old = await client.responses.create({ model: 'mock/chat', input: 'old' });
    const first = await client.responses.create({ model: 'mock/chat', input: 'one' });
    time.ahead = 20 * DAY_MS;
    // a turn 20 days later gives the chain's earlier responses its own 30 days
    const second = await client.responses.create({
      model: 'mock/chat',
      input: 'two',
      previous_response_id: first.id,
    });
    time.ahead = 31 * DAY_MS;
    await expectNotFound(client.responses.retrieve(old.id));
    expect((await client.responses.retrieve(first.id)).id).toBe(first.id);
    const third = await client.responses.create({
      model: 'mock/chat',
      input: 'three',
      previous_response_id: second.id,
    });
    expect(third.status).toBe('completed');
    // the last turn goes 30 days after it; its earlier ones stay at most half a retention longer
    time.ahead = 62 * DAY_MS;
    await expectNotFound(client.responses.retrieve(third.id));
    time.ahead = 77 * DAY_MS;
    for (const id of [first.id, second.id]) await expectNotFound(client.responses.retrieve(id));
  });

  it('a chain continued after a short pause keeps its first turns as long as its last', async () => {
    const client = w.client({ apiKey: await orgKey({ bearer: owner.token }, 'stored-responses') });
    const first = await client.responses.create({ model: 'mock/chat', input: 'one' });
    // 14 days later: less than half the retention, the first turn is 16 days from its removal
    time.ahead = 14 * DAY_MS;
    const second = await client.responses.create({
      model: 'mock/chat',
      input: 'two',
      previous_response_id: first.id,
    });
    // day 31: the first turn's own 30 days are over, the chain's last turn has 13 left
    time.ahead = 31 * DAY_MS;
    const third = await client.responses.create({
      model: 'mock/chat',
      input: 'three',
      previous_response_id: second.id,
    });
    expect(third.status).toBe('completed');
  });

  it("an organization's deletion, and a user's, remove their stored responses", async () => {
    const { owner: doomed } = await w.org('stored-responses-doomed');
    const kept = await w
      .client({ bearer: owner.token })
      .responses.create({ model: 'mock/chat', input: 'kept' });
    const gone = await w
      .client({ bearer: doomed.token })
      .responses.create({ model: 'mock/chat', input: 'gone' });
    await announceOrgDeleted(w, 'stored-responses-doomed');
    await untilGone(w, `/v1/responses/${gone.id}`, { bearer: doomed.token });
    expect((await w.client({ bearer: owner.token }).responses.retrieve(kept.id)).id).toBe(kept.id);

    const { owner: leaving } = await w.org('stored-responses-leaving');
    const theirs = await w
      .client({ bearer: leaving.token })
      .responses.create({ model: 'mock/chat', input: 'mine' });
    await announceUserDeleted(w, leaving.userId);
    await untilGone(w, `/v1/responses/${theirs.id}`, { bearer: leaving.token });
    expect((await w.client({ bearer: owner.token }).responses.retrieve(kept.id)).id).toBe(kept.id);
  });

  it('only POST is billed: one usage event per response, none for reading or deleting', async () => {
    const { owner: billed } = await w.org('stored-responses-billed');
    const as = { bearer: billed.token };
    const client = w.client(as);
    // the requests and the usage read in one calendar minute: the minute's gauge is the count of requests
    await clearOfMinuteEnd(15_000);
    const first = await client.responses.create({ model: 'mock/chat', input: 'one' });
    await client.responses.create({ model: 'mock/chat', input: 'two', previous_response_id: first.id });
    for (let i = 0; i < 3; i++) await client.responses.retrieve(first.id);
    await client.responses.inputItems.list(first.id);
    await client.responses.delete(first.id);
    const usage = await w.counted('stored-responses-billed', as, { requests: 2 });
    const rpm = usage.body.enforced.find((g: { key: string }) => g.key === 'llm.rpm');
    expect(rpm.used).toBe(2);
  });
});
