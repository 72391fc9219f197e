import { ManualClock } from '@tickfleet/testkit';
import { DedupWindow } from './index.js';

describe('DedupWindow', () => {
  it('forgets keys older than the window', () => {
    const clock = new ManualClock();
    const w = new DedupWindow({ windowMs: 1000, clock });
    w.add('a');
    clock.advance(600);
    w.add('b');
    expect(w.has('a')).toBe(true);
    clock.advance(500);
    expect(w.has('a')).toBe(false);
    expect(w.has('b')).toBe(true);
    expect(w.size).toBe(1);
  });

  it('never holds more than maxKeys, evicting the oldest', () => {
    const w = new DedupWindow({ windowMs: 60_000, maxKeys: 100, clock: new ManualClock() });
    for (let i = 0; i < 10_000; i++) w.add(`k${i}`);
    expect(w.size).toBe(100);
    expect(w.has('k9999')).toBe(true);
    expect(w.has('k9900')).toBe(true);
    expect(w.has('k9899')).toBe(false);
  });

  it('counts only the keys still inside the window', () => {
    const clock = new ManualClock();
    const w = new DedupWindow({ windowMs: 1000, clock });
    w.add('a');
    w.add('b');
    expect(w.size).toBe(2);
    clock.advance(1000);
    expect(w.size).toBe(0);
  });
});
