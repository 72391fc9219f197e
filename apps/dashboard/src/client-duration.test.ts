import { formatDurationMs } from '@tickfleet/core';
import { dur } from './client/duration.js';

/**
 * The dashboard's page prints durations with its own copy of core's formatDurationMs (browser code
 * imports only types from outside src/client, which keeps the page's bundle small): both must
 * print every value alike, a cursor lag of days included.
 */
describe('durations on the dashboard page and in the CLI', () => {
  const DAY = 86_400_000;
  const table: Array<[number, string]> = [
    [0, '0ms'],
    [0.4, '0ms'],
    [250, '250ms'],
    [999, '999ms'],
    [1000, '1s'],
    [1500, '1.5s'],
    [12_340, '12.3s'],
    [59_000, '59s'],
    [60_000, '1m'],
    [90_000, '1m30s'],
    [3_600_000, '1h'],
    [3_661_000, '1h1m1s'],
    [86_399_000, '23h59m59s'],
    [DAY, '1d'],
    [DAY + 1000, '1d1s'],
    [2 * DAY + 3 * 3_600_000, '2d3h'],
    // The cursor lag: the CLI printed 574h3m51s where the dashboard printed days.
    [574 * 3_600_000 + 3 * 60_000 + 51_000, '23d22h3m51s'],
    [11 * DAY + 22 * 3_600_000 + 5 * 60_000 + 22_000, '11d22h5m22s'],
    [400 * DAY, '400d'],
  ];

  it.each(table)('%p ms is %p in both', (ms, text) => {
    expect(formatDurationMs(ms)).toBe(text);
    expect(dur(ms)).toBe(text);
  });

  it('agrees with core on a sweep of values from milliseconds to months', () => {
    const differ: Array<[number, string, string]> = [];
    // Log-spaced from 1 ms to 90 days, and each unit's edges.
    const values = Array.from({ length: 20_000 }, (_, i) => Math.round(10 ** ((i / 20_000) * Math.log10(90 * DAY))));
    for (const edge of [1000, 60_000, 3_600_000, DAY]) values.push(edge - 501, edge - 500, edge - 1, edge, edge + 1, edge + 499, edge + 500);
    for (const ms of values) if (dur(ms) !== formatDurationMs(ms)) differ.push([ms, dur(ms), formatDurationMs(ms)]);
    expect(differ).toEqual([]);
  });

  it('prints an unknown duration as a dash on the page', () => {
    expect(dur(null)).toBe('-');
    expect(dur(undefined)).toBe('-');
  });
});
