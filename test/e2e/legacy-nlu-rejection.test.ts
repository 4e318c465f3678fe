import { waitFor } from '@platform/testkit';
import { callJson, startTestPlatform, type TestPlatform } from '../harness';

/**
 * The fallback is right out of the box (issue 12): at the service's default settings, an assistant of 3 intents
 * and one of 150 both answer the fallback to unrelated text and the right intent to in-scope sentences they were
 * never trained on, through the edge as a developer and their users reach them.
 */

const UNRELATED = ['the quantum flux capacitor sings purple', 'my grandmother knits socks for penguins'];

const utterances = (texts: string[]) => ({ en: texts.map((text) => ({ data: [{ text }] })) });
const answer = (text: string) => ({ en: { default: { default: [{ type: 'text', text: [text] }] } } });

/** three everyday intents; paraphrases share words with the training sentences but none is one of them */
const SMALL: Array<{ name: string; train: string[]; paraphrases: string[] }> = [
  {
    name: 'BookTable',
    train: [
      'book a table for two tonight',
      'i would like to reserve a table',
      'can i get a table for four at eight',
      'reserve a table for dinner',
      'do you have a free table tomorrow evening',
    ],
    paraphrases: ['could you reserve a table for three people', 'i want to book a dinner table for tomorrow'],
  },
  {
    name: 'OpeningHours',
    train: [
      'when are you open',
      'what are your opening hours',
      'are you open on sunday',
      'what time do you close tonight',
      'until when is the restaurant open',
    ],
    paraphrases: ['what time do you open on saturday', 'is the restaurant open on monday'],
  },
  {
    name: 'Menu',
    train: [
      'show me the menu',
      'what is on the menu today',
      'do you have vegetarian dishes',
      'what desserts do you serve',
      'can i see the wine list',
    ],
    paraphrases: ['which vegetarian dishes are on the menu', 'what dishes do you serve today'],
  },
];

const VERBS = 'book cancel change check pay renew track upgrade report find'.split(' ');
const NOUNS =
  'flight hotel card loan parcel ticket subscription insurance appointment invoice password car account order mortgage'.split(
    ' ',
  );
const TEMPLATES = [
  'i want to {v} my {n}',
  'please {v} the {n}',
  'can you {v} a {n} for me',
  'help me {v} my {n}',
  'i need to {v} the {n} today',
  'how do i {v} my {n}',
  '{v} {n} now',
  'is it possible to {v} a {n}',
];
const PARAPHRASES = ['could you please {v} our {n} right away', 'i would like you to {v} this {n}'];
const fill = (t: string, v: string, n: string) => t.replace('{v}', v).replace('{n}', n);

/** 150 intents, one per verb and noun ("cancel flight", "track parcel"), that share their words with others */
function largeAssistant(): Array<{ name: string; train: string[]; paraphrases: string[] }> {
  return VERBS.flatMap((v) =>
    NOUNS.map((n) => ({
      name: `${v}_${n}`,
      train: TEMPLATES.map((t) => fill(t, v, n)),
      paraphrases: PARAPHRASES.map((t) => fill(t, v, n)),
    })),
  );
}

describe('the legacy fallback at default settings, through the edge', () => {
  let platform: TestPlatform;
  let session: string;

  beforeAll(async () => {
    // The edge retires legacy v1 on 2025-12-31 by default; an operator keeps it open during a migration.
    // hundreds of sentences from one visitor in a few seconds: Messages' rate limits (decision 0112) are off here
    platform = await startTestPlatform({
      env: {
        LEGACY_V1_RETIREMENT_DATE: '2099-01-01',
        LEGACY_MESSAGES_PER_ADDRESS: '0',
        LEGACY_MESSAGES_PER_USER: '0',
      },
    });
    const signup = await callJson(`${platform.legacyUrl}/v2/auth/signup`, 'POST', {
      body: { username: 'grace', password: 'compiling since 1952' },
    });
    expect(signup.status).toBe(200);
    session = signup.body.sessionToken;
  });
  afterAll(() => platform.stop());

  async function assistant(name: string, intents: Array<{ name: string; train: string[] }>) {
    const res = await fetch(`${platform.legacyUrl}/v2/bots`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-legacy-session-token': session },
      body: JSON.stringify({ name, lang: 'en', languages: ['en'] }),
    });
    expect(res.status).toBe(200);
    const bot = (await res.json()) as { clientToken: string; developerToken: string };
    const create = (body: unknown) =>
      callJson(`${platform.legacyUrl}/v1/intents`, 'POST', { bearer: bot.developerToken, body });
    expect(
      (await create({ name: 'Fallback', isFallback: true, conditionalResponses: answer('Sorry?') })).status,
    ).toBe(200);
    for (const intent of intents) {
      const res = await create({
        name: intent.name,
        utterances: utterances(intent.train),
        conditionalResponses: answer(intent.name),
      });
      expect(res.status).toBe(200);
    }
    await waitFor(
      async () =>
        (await callJson(`${platform.legacyUrl}/v1/bots`, 'GET', { bearer: bot.developerToken })).body.training
          ?.upToDate === true,
      { timeoutMs: 120_000, what: `${name} to be trained` },
    );
    return bot;
  }

  async function top(clientToken: string, text: string) {
    const reply = await callJson(`${platform.legacyUrl}/v1/Messages`, 'POST', {
      bearer: clientToken,
      body: { userId: 'visitor', platform: 'web', text },
    });
    expect(reply.status).toBe(200);
    return reply.body.intents[0] as { name: string; isFallback: boolean; confidence: number };
  }

  it.each([
    ['3 intents', () => SMALL],
    ['150 intents', largeAssistant],
  ])(
    'an assistant of %s rejects unrelated text and answers in-scope paraphrases',
    async (label, intents) => {
      const set = intents();
      const bot = await assistant(label, set);
      for (const text of UNRELATED) {
        const got = await top(bot.clientToken, text);
        expect([text, got.name, got.isFallback]).toEqual([text, 'Fallback', true]);
      }
      // every paraphrase of the small assistant; a fixed sample of the large one's (one per verb)
      const sample = set.length <= 3 ? set : set.filter((_, i) => i % NOUNS.length === i % VERBS.length);
      for (const intent of sample) {
        for (const text of intent.paraphrases) {
          const got = await top(bot.clientToken, text);
          expect([text, got.name, got.isFallback]).toEqual([text, intent.name, false]);
        }
      }
    },
    180_000,
  ); // training 150 intents waits up to 120 s on a loaded machine
});
