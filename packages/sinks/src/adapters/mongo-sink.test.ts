import { SinkUnavailableError } from '@tickfleet/core';
import { freePort } from '@tickfleet/testkit';
import { PipelineMetrics, type SinkState } from '../index.js';
import { MongoSink } from './mongo-sink.js';
import { trades } from '../../test/fixtures/envelopes.js';

// Needs a server this test can stop and start on a fixed port: the in-repo wire server, so it does
// not run against a real MongoDB given by MONGO_URL.
const run = process.env.MONGO_URL ? describe.skip : describe;
run('MongoSink state machine', () => {
  it('ok -> unavailable (first exhausted batch) -> degraded (N consecutive) -> ok on the next success', async () => {
    const { startMongoWire } = await import('@tickfleet/mongo-wire');
    const port = await freePort();
    const sink = new MongoSink(`mongodb://127.0.0.1:${port}/state`, {
      maxRetries: 2,
      retryBaseMs: 5,
      failuresForDegraded: 3,
      serverSelectionTimeoutMs: 150,
      connectTimeoutMs: 150,
    });
    const metrics = new PipelineMetrics();
    const seen: SinkState[] = [];
    sink.onStateChange((s) => {
      seen.push(s);
      metrics.setSinkState('mongodb', s);
    });
    expect(sink.state).toBe('ok');
    // No server on the port: the driver's connection failures, retried, surface as SinkUnavailableError.
    const first = await sink.write(trades(3)).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(first).toBeInstanceOf(SinkUnavailableError);
    expect(first).toMatchObject({ code: 'E_SINK_UNAVAILABLE', adapter: 'mongodb', attempts: 3, retryable: true });
    expect(sink.state).toBe('unavailable');
    await expect(sink.write(trades(3))).rejects.toMatchObject({ code: 'E_SINK_UNAVAILABLE', adapter: 'mongodb', attempts: 3 });
    expect(sink.state).toBe('unavailable');
    await expect(sink.write(trades(3))).rejects.toMatchObject({ code: 'E_SINK_UNAVAILABLE', adapter: 'mongodb', attempts: 3 });
    expect(sink.state).toBe('degraded');
    expect(sink.consecutiveFailures).toBe(3);
    expect(await metrics.registry.metrics()).toContain('tickfleet_sink_state{adapter="mongodb"} 2');
    const server = await startMongoWire({ port });
    try {
      // The driver finds the server again only at its next look (and 150 ms of server selection is short
      // on a busy machine): a write may still fail, and the sink stays degraded until one succeeds.
      let back: unknown;
      for (let attempt = 0; attempt < 50 && back === undefined; attempt++) {
        back = await sink.write(trades(3)).catch((err: unknown) => {
          expect(err).toMatchObject({ code: 'E_SINK_UNAVAILABLE', adapter: 'mongodb' });
          expect(sink.state).toBe('degraded');
          return undefined;
        });
      }
      expect(back).toEqual({ inserted: 3, duplicates: 0, rejected: [] });
      expect(sink.state).toBe('ok');
      expect(seen).toEqual(['unavailable', 'degraded', 'ok']);
    } finally {
      await sink.close();
      await server.stop();
    }
  });
});
