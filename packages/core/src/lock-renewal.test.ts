import { renewEveryMsFor } from './lock-renewal.js';

describe('renewEveryMsFor', () => {
  it('renews every third of the lifetime, rounded down, so two renewals may fail before it lapses', () => {
    expect(renewEveryMsFor(5000)).toBe(1666);
    expect(renewEveryMsFor(30_000)).toBe(10_000);
    expect(3 * renewEveryMsFor(5000)).toBeLessThan(5000);
  });

  it('renews at least every millisecond under a lifetime shorter than 3 ms', () => {
    expect(renewEveryMsFor(2)).toBe(1);
    expect(renewEveryMsFor(0)).toBe(1);
  });
});
