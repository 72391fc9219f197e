import { ValidationError } from '@tickfleet/core';
import { emulatedLimit, mergeScenario, parseScenario } from './scenario.js';

const NOW = 1_700_000_000_000;

describe('scenario', () => {
  test('relative windows become absolute at apply time; storm null clears; limits merge key by key', () => {
    const base = mergeScenario({}, parseScenario({ venues: { binance: { limit: { weight: 100, windowMs: 10_000 }, stormForMs: 5000 } } }), NOW);
    expect(base).toEqual({ venues: { binance: { limit: { weight: 100, windowMs: 10_000 }, storm: { fromMs: NOW, toMs: NOW + 5000 } } } });
    const next = mergeScenario(
      base,
      parseScenario({ outageForMs: 1000, venues: { binance: { limit: { banMs: 500 }, storm: null, outageForMs: 2000 } } }),
      NOW + 10,
    );
    expect(next).toEqual({
      outages: [{ fromMs: NOW + 10, toMs: NOW + 1010 }],
      venues: { binance: { limit: { weight: 100, windowMs: 10_000, banMs: 500 }, outages: [{ fromMs: NOW + 10, toMs: NOW + 2010 }] } },
    });
    // weight and requests are one number: the newer name replaces the older
    const renamed = mergeScenario(next, parseScenario({ venues: { binance: { limit: { requests: 7 } } } }), NOW);
    expect(renamed.venues?.binance?.limit).toEqual({ requests: 7, windowMs: 10_000, banMs: 500 });
    expect(emulatedLimit('binance', renamed.venues?.binance?.limit)).toEqual({
      enabled: true,
      limit: 7,
      windowMs: 10_000,
      banAfter: 5,
      banMs: 500,
      maxDelayMs: 0,
    });
  });

  test('stream faults merge field by field per venue; silenceForMs becomes a silence window', () => {
    const base = mergeScenario({}, parseScenario({ streams: { binance: { gapEvery: 10, silenceForMs: 500 } } }), NOW);
    const next = mergeScenario(base, parseScenario({ streams: { binance: { disconnectEvery: 50 }, kraken: { checksumCorruptionRate: 0.1 } } }), NOW + 1);
    expect(next.streams).toEqual({
      binance: { gapEvery: 10, disconnectEvery: 50, silences: [{ fromMs: NOW, toMs: NOW + 500 }] },
      kraken: { checksumCorruptionRate: 0.1 },
    });
  });

  test('defaults follow the published limits', () => {
    expect(emulatedLimit('binance', undefined)).toMatchObject({ limit: 6000, windowMs: 60_000, banAfter: 5, banMs: 120_000 });
    expect(emulatedLimit('polygon', undefined)).toMatchObject({ limit: 5, windowMs: 60_000 });
    expect(emulatedLimit('polymarket', undefined)).toMatchObject({ limit: 1500, windowMs: 10_000, maxDelayMs: 2000 });
    expect(emulatedLimit('xetra', undefined)).toMatchObject({ limit: 5, windowMs: 2000 });
  });

  test.each([
    [{ seed: -1 }, 'scenario.seed'],
    [{ venues: { polygon: { latencyMs: { min: 5, max: 1 } } } }, 'scenario.venues.polygon.latencyMs.max'],
    [{ venues: { polygon: { latencyMs: 'slow' } } }, 'scenario.venues.polygon.latencyMs'],
    [{ venues: { binance: { limit: { weight: 5, requests: 5 } } } }, 'scenario.venues.binance.limit'],
    [{ venues: { binance: { symbols: ['btcusdt'] } } }, 'scenario.venues.binance.symbols.0'],
    [{ venues: { binance: { holes: { ranges: [{ fromMs: 10, toMs: 5 }] } } } }, 'scenario.venues.binance.holes.ranges.0.toMs'],
    [{ venues: { xetra: { isins: ['nope'] } } }, 'scenario.venues.xetra.isins.0'],
    [{ venues: { nasdaq: {} } }, 'scenario.venues.nasdaq'],
    [{ streams: { binance: { gapEvery: 1 } } }, 'scenario.streams.binance.gapEvery'],
    [{ streams: { kraken: { garbledRate: 2 } } }, 'scenario.streams.kraken.garbledRate'],
    [{ streams: { okx: {} } }, 'scenario.streams.okx'],
  ])('a bad scenario names the field: %j', (value, field) => {
    let err: unknown;
    try {
      parseScenario(value);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe(field);
  });
});
