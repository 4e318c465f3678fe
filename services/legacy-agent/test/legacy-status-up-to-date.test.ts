import { accountWithBot, type Bot, client, dev, utterance } from './support/fixtures';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';

const intent = (name: string, sentence: string) => ({
  name,
  utterances: { en: [utterance(sentence)] },
  conditionalResponses: { en: { default: { default: [{ type: 'text', text: [`${name} answer`] }] } } },
});

describe('legacy training status: up to date means the new model answers', () => {
  let app: LegacyTestApp;
  let bot: Bot;

  beforeEach(async () => {
    app = await startLegacyApp({
      nlu: new ScriptedNlu(),
      // the test asks many questions in a row
      env: { LEGACY_MESSAGES_PER_USER: '0', LEGACY_MESSAGES_PER_ADDRESS: '0' },
    });
    ({ bot } = await accountWithBot(app.http));
  });
  afterEach(async () => {
    await app.close();
  });

  it('answers a message sent as soon as the status says up to date with the model that learnt the change, every time', async () => {
    const rounds = 40;
    const wrong: string[] = [];
    for (let round = 0; round < rounds; round++) {
      const name = `Ask${round}`;
      const sentence = `question number${round} please`;
      await app.http.post('/v1/intents').set(dev(bot)).send(intent(name, sentence)).expect(200);
      // polled as a client would, without a pause: the first up-to-date status is followed by the message at once
      const deadline = Date.now() + 20_000;
      for (;;) {
        const status = await app.http.get('/v1/bots').set(dev(bot)).expect(200);
        if (status.body.training.upToDate === true) break;
        if (Date.now() > deadline) throw new Error(`round ${round}: the status never said up to date`);
      }
      const answer = await app.http
        .post('/v1/Messages')
        .set(client(bot))
        .send({ userId: 'u', platform: 'web', text: sentence })
        .expect(200);
      const top = answer.body.intents[0].name as string;
      if (top !== name) wrong.push(`round ${round}: ${top} answered, not ${name}`);
    }
    expect(wrong).toEqual([]);
  });
});
