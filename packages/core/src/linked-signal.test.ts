import { setTimeout as sleep } from 'node:timers/promises';
import { linkedSignal } from './linked-signal.js';

describe('linkedSignal', () => {
  test('aborts with the reason of whichever input aborts first, and only once', () => {
    const a = new AbortController();
    const b = new AbortController();
    const linked = linkedSignal([a.signal, undefined, b.signal]);
    expect(linked.signal.aborted).toBe(false);
    b.abort(new Error('b went'));
    a.abort(new Error('a went'));
    expect(linked.signal.aborted).toBe(true);
    expect((linked.signal.reason as Error).message).toBe('b went');
  });

  test('an input that is already aborted aborts it at once', () => {
    const a = new AbortController();
    a.abort(new Error('gone before'));
    const linked = linkedSignal([new AbortController().signal, a.signal], 60_000);
    expect((linked.signal.reason as Error).message).toBe('gone before');
  });

  test('the timeout aborts it with a TimeoutError, as AbortSignal.timeout does', async () => {
    const linked = linkedSignal([new AbortController().signal], 20);
    await new Promise((resolve) => linked.signal.addEventListener('abort', resolve, { once: true }));
    expect((linked.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  test('dispose lets go: later aborts of the inputs and the timeout reach it no more', async () => {
    const a = new AbortController();
    const linked = linkedSignal([a.signal], 20);
    linked.dispose();
    linked.dispose();
    a.abort(new Error('after the work'));
    await sleep(60);
    expect(linked.signal.aborted).toBe(false);
  });

  test('a long-lived input does not collect listeners from disposed links', () => {
    const shutdown = new AbortController();
    let added = 0;
    let removed = 0;
    const add = shutdown.signal.addEventListener.bind(shutdown.signal);
    const remove = shutdown.signal.removeEventListener.bind(shutdown.signal);
    shutdown.signal.addEventListener = ((...args: Parameters<typeof add>) => (added++, add(...args))) as typeof add;
    shutdown.signal.removeEventListener = ((...args: Parameters<typeof remove>) => (removed++, remove(...args))) as typeof remove;
    for (let i = 0; i < 100; i++) linkedSignal([shutdown.signal]).dispose();
    expect(added).toBe(100);
    expect(removed).toBe(100);
  });
});
