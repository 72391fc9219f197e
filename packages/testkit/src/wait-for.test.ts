import { createServer } from 'node:net';
import { freePort } from '@tickfleet/queues';
import { FixtureError, WaitTimeoutError } from './testkit-error.js';
import { waitFor } from './wait-for.js';

describe('waitFor', () => {
  it('returns the first truthy value of the predicate', async () => {
    let calls = 0;
    await expect(waitFor(() => (++calls >= 3 ? `after ${calls}` : null), 'three calls', { intervalMs: 1 })).resolves.toBe('after 3');
  });

  it('times out with a WaitTimeoutError naming what it waited for and the last failure', async () => {
    const err = await waitFor(
      () => {
        throw new Error('not yet');
      },
      'the impossible',
      { timeoutMs: 50, intervalMs: 5 },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaitTimeoutError);
    expect(err).toBeInstanceOf(FixtureError);
    expect(err).toMatchObject({ what: 'the impossible', timeoutMs: 50, name: 'WaitTimeoutError' });
    expect((err as Error).message).toBe('timed out after 50 ms waiting for the impossible: Error: not yet');
  });
});

describe('freePort', () => {
  it('returns a loopback port a server can listen on', async () => {
    const port = await freePort();
    const srv = createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(port, '127.0.0.1', () => resolve());
    });
    expect((srv.address() as { port: number }).port).toBe(port);
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  });
});
