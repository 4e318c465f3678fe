import { waitFor } from '@platform/testkit';
import { watchBus } from './bus-watch';

describe('watching the bus for the principal cache', () => {
  it('says the bus is away when its ping fails or does not answer, and back when it answers again', async () => {
    const told: string[] = [];
    const principals = {
      busAway: () => void told.push('away'),
      busBack: () => void told.push('back'),
    };
    let answer: 'ok' | 'fail' | 'hang' = 'ok';
    let pings = 0;
    const bus = {
      ping: () => {
        pings++;
        if (answer === 'ok') return Promise.resolve();
        if (answer === 'fail') return Promise.reject(new Error('NATS is not connected yet'));
        return new Promise<void>((resolve) => {
          const wake = setInterval(() => {
            if (answer === 'ok') {
              clearInterval(wake);
              resolve();
            }
          }, 5);
        });
      },
    };
    const stop = watchBus(bus, principals, 10);
    try {
      await waitFor(() => told.at(-1) === 'back', { what: 'the bus there' });
      answer = 'fail';
      await waitFor(() => told.at(-1) === 'away', { what: 'a failing ping' });
      answer = 'ok';
      await waitFor(() => told.at(-1) === 'back', { what: 'the bus back' });
      answer = 'hang';
      await waitFor(() => told.at(-1) === 'away', { what: 'a ping left waiting' });
      const waiting = pings;
      await waitFor(() => told.filter((t) => t === 'away').length >= 4, { what: 'more checks' });
      expect(pings).toBe(waiting); // the ping left waiting is not asked again
      answer = 'ok';
      await waitFor(() => told.at(-1) === 'back', { what: 'the waiting ping answered' });
    } finally {
      stop();
    }
  });
});
