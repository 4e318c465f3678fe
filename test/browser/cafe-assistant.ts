import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@platform/testkit';
import { callJson } from '../harness';

/**
 * A small café assistant whose replies use every item type the web chat renders (text, buttons, a link,
 * cards with images, links and buttons, an event), and the café's site that embeds the chat.
 */
const say = (text: string) => ({ type: 'text', text });
const button = (text: string, value: string) => ({ type: 'button', text, value });
const utterances = (...texts: string[]) => ({ en: texts.map((text) => ({ data: [{ text }] })) });
const answer = (...elements: unknown[]) => ({ en: { default: { default: elements } } });

function cafeIntents(imageBase: string) {
  return [
    {
      name: 'Welcome',
      isWelcome: true,
      conditionalResponses: answer(
        say("Hi! I'm the Harbour Café assistant. How can I help you today?"),
        button('Opening hours', 'when are you open'),
        button('See the menu', 'show me the menu'),
      ),
    },
    {
      name: 'Fallback',
      isFallback: true,
      conditionalResponses: answer(
        say("Sorry, I didn't catch that. Try one of these:"),
        button('See the menu', 'show me the menu'),
      ),
    },
    {
      name: 'Hours',
      utterances: utterances(
        'when are you open',
        'what are your opening hours',
        'are you open on sunday',
        'what time do you close',
        'opening times',
      ),
      conditionalResponses: answer(say("We're open every day from 8:00 to 18:00."), {
        type: 'link',
        text: 'Find us on the map',
        value: 'https://example.com/map',
      }),
    },
    {
      name: 'Menu',
      utterances: utterances(
        'show me the menu',
        'what do you serve',
        'menu please',
        'what food do you have',
        'can i see the menu',
      ),
      conditionalResponses: answer(say("Here is today's menu:"), {
        type: 'cards',
        cards: [
          {
            title: 'Flat white',
            text: 'Double ristretto, silky milk. €3.40',
            image: `${imageBase}/coffee.svg`,
            buttons: [{ text: 'Order one', value: 'i want to order' }],
          },
          {
            title: 'Cinnamon bun',
            text: 'Baked every morning. €2.90',
            image: `${imageBase}/bun.svg`,
            links: [{ text: 'Allergens', value: 'https://example.com/allergens' }],
          },
        ],
      }),
    },
    {
      name: 'Order',
      utterances: utterances(
        'i want to order',
        'can i order',
        'order please',
        'i would like to order something',
        'place an order',
      ),
      conditionalResponses: answer(say('Great choice! Pick it up at the counter.'), {
        type: 'event',
        text: 'Start over',
        value: 'WELCOME',
      }),
    },
  ];
}

const picture = (from: string, to: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="440" height="240"><defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="${from}"/><stop offset="1" stop-color="${to}"/></linearGradient></defs><rect width="440" height="240" fill="url(#g)"/><circle cx="220" cy="120" r="60" fill="rgba(255,255,255,.35)"/></svg>`;

export interface CafeSite {
  origin: string;
  server: Server;
}

/** The café's site on its own origin (a loopback port): a page embedding the chat, and the menu's pictures. */
/** The café's site, its page in `lang`, embedding the chat with `scriptTag`. */
export async function hostCafeSite(scriptTag: () => string, lang = 'en'): Promise<CafeSite> {
  const server = createServer((req, res) => {
    if (req.url === '/coffee.svg' || req.url === '/bun.svg') {
      res.writeHead(200, { 'content-type': 'image/svg+xml' });
      res.end(req.url === '/coffee.svg' ? picture('#7c4a2d', '#d6a77a') : picture('#b45309', '#fcd34d'));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Harbour Café</title></head>
<body style="margin:0;font-family:Georgia,serif;background:#fdf8f3;color:#3b2a1e">
<header style="padding:40px 48px;background:#3b2a1e;color:#fdf8f3"><h1 style="margin:0">Harbour Café</h1><p>Coffee and buns by the water since 1998.</p></header>
<main style="padding:32px 48px;max-width:640px"><h2>Visit us</h2><p>Questions? Our assistant answers in the chat at the bottom right.</p></main>
${scriptTag()}</body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

export const closeSite = (site: CafeSite | undefined) =>
  new Promise((resolve) => (site ? site.server.close(resolve) : resolve(undefined)));

/**
 * Signs a legacy developer up, creates the café assistant with its intents (pictures served by `imageBase`),
 * allows `allowedOrigins`, and waits for its training.
 */
export async function createCafeAssistant(
  legacyUrl: string,
  imageBase: string,
  allowedOrigins: string[],
): Promise<{ clientToken: string; developerToken: string }> {
  const signup = await callJson(`${legacyUrl}/v2/auth/signup`, 'POST', {
    body: { username: 'harbour', password: 'flat white please' },
  });
  const created = await fetch(`${legacyUrl}/v2/bots`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-legacy-session-token': signup.body.sessionToken },
    body: JSON.stringify({ name: 'Harbour Café', lang: 'en' }),
  });
  const bot = (await created.json()) as { clientToken: string; developerToken: string };
  for (const intent of cafeIntents(imageBase)) {
    const res = await callJson(`${legacyUrl}/v1/intents`, 'POST', {
      bearer: bot.developerToken,
      body: intent,
    });
    if (res.status !== 200) throw new Error(`intent ${intent.name}: ${res.status}`);
  }
  const patched = await callJson(`${legacyUrl}/v1/bots`, 'PATCH', {
    bearer: bot.developerToken,
    body: { allowedOrigins },
  });
  if (JSON.stringify(patched.body.allowedOrigins) !== JSON.stringify(allowedOrigins))
    throw new Error(`allowedOrigins not saved: ${JSON.stringify(patched.body)}`);
  await waitFor(
    async () =>
      (await callJson(`${legacyUrl}/v1/bots`, 'GET', { bearer: bot.developerToken })).body.training.upToDate,
    { timeoutMs: 20_000, intervalMs: 100, what: 'training' },
  );
  return bot;
}
