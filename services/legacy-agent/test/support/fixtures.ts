import { waitFor } from '@platform/testkit';
import type supertest from 'supertest';

type Http = ReturnType<typeof supertest>;

let counter = 0;
export const uniqueName = (prefix = 'dev') =>
  `${prefix}${Date.now().toString(36)}${(counter++).toString(36)}`;

export async function signup(http: Http, username = uniqueName(), password = 'correct horse battery') {
  const res = await http.post('/v2/auth/signup').send({ username, password }).expect(200);
  return {
    username,
    password,
    userId: res.body.userId as string,
    sessionToken: res.body.sessionToken as string,
  };
}

export interface Bot {
  id: string;
  name: string;
  clientToken: string;
  developerToken: string;
  lang: string;
  languages: string[];
}

/** An account and one assistant; `languages` defaults to [lang]. */
export async function accountWithBot(http: Http, bot: Record<string, unknown> = {}) {
  const account = await signup(http);
  const res = await http
    .post('/v2/bots')
    .set('X-Legacy-Session-Token', account.sessionToken)
    .send({ name: 'Travel helper', lang: 'en', description: 'helps travellers', ...bot })
    .expect(200);
  return { account, bot: res.body as Bot };
}

export const dev = (bot: Bot) => ({ Authorization: `Bearer ${bot.developerToken}` });
export const client = (bot: Bot) => ({ Authorization: `Bearer ${bot.clientToken}` });

/** An utterance from text where `[words](Entity)` or `[words](Entity:slot)` marks an entity. */
export function utterance(text: string) {
  const data: Array<{ text: string; entity?: string; slot_name?: string }> = [];
  const pattern = /\[([^\]]+)\]\(([^):]+)(?::([^)]+))?\)/g;
  let last = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    if (m.index > last) data.push({ text: text.slice(last, m.index) });
    data.push({ text: m[1]!, entity: m[2]!, ...(m[3] ? { slot_name: m[3] } : {}) });
    last = m.index + m[0].length;
  }
  if (last < text.length) data.push({ text: text.slice(last) });
  return { data };
}

export const say = (...alternatives: string[]) => ({ type: 'text', text: alternatives });

/** Waits until the assistant's models learnt its current intents and entities. */
export async function trained(http: Http, bot: Bot, timeoutMs = 20_000): Promise<void> {
  await waitFor(
    async () => (await http.get('/v1/bots').set(dev(bot)).expect(200)).body.training.upToDate === true,
    { timeoutMs, intervalMs: 50, what: `training of ${bot.name}` },
  );
}
