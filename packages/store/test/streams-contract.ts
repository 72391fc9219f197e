import { NotFoundError, ValidationError } from '@tickfleet/core';
import type { StateStore } from '../src/index.js';
import { storePerTest, type OpenStoreInNamespace } from './store-contract.js';

/**
 * The streams repository every StateStore adapter must provide: definitions, enable/disable, and
 * the set's version that moves with every change and only then. Call from an adapter's test file
 * next to describeStoreContract.
 */
export function describeStreamsContract(name: string, open: OpenStoreInNamespace): void {
  describe(`StreamsRepo contract: ${name}`, () => {
    const { openAgain } = storePerTest(open, 's');
    let store: StateStore;
    beforeEach(async () => {
      store = await openAgain();
    });

    it('creates, replaces, disables and removes streams, bumping versions on changes only', async () => {
      const streams = store.streams;
      expect(await streams.streamsVersion()).toBe(0);
      const created = await streams.upsert({ name: 'majors', venue: 'binance', symbols: ['btc/usdt', ' ETH/USDT', 'BTC/USDT'] });
      expect(created).toMatchObject({
        name: 'majors',
        venue: 'binance',
        symbols: ['BTC/USDT', 'ETH/USDT'],
        channels: ['trades'],
        bookDepth: null,
        enabled: true,
        version: 1,
      });
      expect(created.updatedAt).toBe(created.createdAt);
      await streams.upsert({ name: 'kr', venue: 'kraken', symbols: ['BTC/USD'], channels: ['book', 'trades'], enabled: false });
      expect(await streams.streamsVersion()).toBe(2);

      // The same definition again is no change: neither the stream's nor the set's version moves.
      expect(await streams.upsert({ name: 'majors', venue: 'binance', symbols: ['BTC/USDT', 'ETH/USDT'], channels: ['trades'] })).toEqual(created);
      expect(await streams.streamsVersion()).toBe(2);

      const disabled = await streams.setEnabled('majors', false);
      expect(disabled).toMatchObject({ enabled: false, version: 2, createdAt: created.createdAt });
      expect(await streams.setEnabled('majors', false)).toEqual(disabled);
      expect(await streams.streamsVersion()).toBe(3);

      // A replace keeps createdAt and, when it names none, the enabled flag.
      const replaced = await streams.upsert({ name: 'majors', venue: 'binance', symbols: ['SOL/USDT'], channels: ['trades', 'book'], bookDepth: 500 });
      expect(replaced).toMatchObject({
        symbols: ['SOL/USDT'],
        channels: ['trades', 'book'],
        bookDepth: 500,
        enabled: false,
        version: 3,
        createdAt: created.createdAt,
      });
      expect(await streams.streamsVersion()).toBe(4);

      // Another connection sees the same state.
      const other = await openAgain();
      expect(await other.streams.get('majors')).toEqual(replaced);
      expect(await other.streams.get('kr')).toMatchObject({ venue: 'kraken', channels: ['trades', 'book'], bookDepth: 10, enabled: false });
      expect((await other.streams.list()).map((s) => s.name)).toEqual(['kr', 'majors']);
      expect((await other.streams.list({ venue: 'kraken' })).map((s) => s.name)).toEqual(['kr']);
      expect(await other.streams.list({ enabled: true })).toEqual([]);
      await other.streams.setEnabled('kr', true);
      expect((await streams.list({ enabled: true })).map((s) => s.name)).toEqual(['kr']);
      expect(await streams.streamsVersion()).toBe(5);

      expect(await streams.remove('majors')).toBe(true);
      expect(await streams.remove('majors')).toBe(false);
      expect(await streams.get('majors')).toBeNull();
      expect(await streams.streamsVersion()).toBe(6);
      const missing = await streams.setEnabled('majors', true).catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(NotFoundError);
      expect((missing as Error).message).toBe('stream "majors" not found');

      // The name used again is a new stream whose version goes on: the set's version never goes back.
      const again = await streams.upsert({ name: 'majors', venue: 'kraken', symbols: ['ETH/USD'] });
      expect(again).toMatchObject({ venue: 'kraken', symbols: ['ETH/USD'], enabled: true, version: 5 });
      expect(await streams.streamsVersion()).toBe(7);
      expect((await other.streams.list()).map((s) => `${s.name}@${s.version}`)).toEqual(['kr@2', 'majors@5']);
    });

    it('refuses invalid definitions naming the field, storing nothing', async () => {
      const streams = store.streams;
      const refused = await streams.upsert({ name: 'x', venue: 'polygon', symbols: ['AAPL/USD'] }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ValidationError);
      expect(refused).toMatchObject({ field: 'venue', message: 'invalid venue: expected a venue with streams (binance, kraken), got "polygon"' });
      await expect(streams.upsert({ name: 'x', venue: 'binance', symbols: ['BTC/USDT', '../etc'] })).rejects.toMatchObject({
        field: 'symbols[1]',
        received: '../etc',
      });
      await expect(streams.upsert({ name: 'Bad Name', venue: 'binance', symbols: ['BTC/USDT'] })).rejects.toMatchObject({ field: 'stream name' });
      const tooMany = Array.from({ length: 513 }, (_, i) => `C${i}/USDT`);
      await expect(streams.upsert({ name: 'x', venue: 'binance', symbols: tooMany, channels: ['trades', 'book'] })).rejects.toMatchObject({ field: 'symbols' });
      expect(await streams.list()).toEqual([]);
      expect(await streams.streamsVersion()).toBe(0);
    });

    it('loses no change when two connections replace one stream at once', async () => {
      const other = await openAgain();
      await store.streams.upsert({ name: 'race', venue: 'binance', symbols: ['BTC/USDT'] });
      // Ten distinct definitions, five from each connection, all in flight together: each is a change.
      await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? store : other).streams.upsert({ name: 'race', venue: 'binance', symbols: [`C${i}/USDT`] })),
      );
      expect(await store.streams.get('race')).toMatchObject({ version: 11 });
      expect(await other.streams.streamsVersion()).toBe(11);
    });
  });
}
