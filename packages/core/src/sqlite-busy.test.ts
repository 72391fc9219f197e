import { retryWhileBusySync } from './sqlite-busy.js';

const busy = (): Error => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });

describe('retryWhileBusySync', () => {
  test('runs again while SQLite answers BUSY, then returns the result', () => {
    let calls = 0;
    const result = retryWhileBusySync(() => {
      calls += 1;
      if (calls < 3) throw busy();
      return 'wal';
    }, 5000);
    expect({ result, calls }).toEqual({ result: 'wal', calls: 3 });
  });

  test('rethrows any other error at once', () => {
    let calls = 0;
    expect(() =>
      retryWhileBusySync(() => {
        calls += 1;
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
      }, 5000),
    ).toThrow('disk I/O error');
    expect(calls).toBe(1);
  });

  test('gives up with the BUSY error once the time is spent', () => {
    let calls = 0;
    // 200 ms: long enough that a pause of this process before the first retry cannot use it all up
    expect(() =>
      retryWhileBusySync(() => {
        calls += 1;
        throw busy();
      }, 200),
    ).toThrow('database is locked');
    expect(calls).toBeGreaterThan(1);
  });
});
