import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, SpoolFullError } from '@tickfleet/core';
import { PipelineMetrics } from '@tickfleet/sinks';
import { tempDir, type TempDir } from '@tickfleet/testkit';
import { openWorkerSpool, spoolHealthz } from './worker-spool.js';
import { trades } from '../../../packages/sinks/test/fixtures/envelopes.js';
import { mountTmpfs, tmpfsUnsupported } from '../../../packages/sinks/test/fixtures/tmpfs.js';

describe('openWorkerSpool', () => {
  let dir: TempDir;
  beforeEach(() => (dir = tempDir('worker-spool-')));
  afterEach(() => dir.remove());

  it('takes the first slot no live process holds and reports to the metrics it is given', async () => {
    // Slot 0 held by a live process (our parent).
    mkdirSync(join(dir.path, 'worker-0'));
    writeFileSync(join(dir.path, 'worker-0', 'spool.lock'), String(process.ppid));
    const metrics = new PipelineMetrics();
    const spool = openWorkerSpool(dir.path, {}, metrics);
    expect(spool.dir).toBe(join(dir.path, 'worker-1'));
    await spool.append(trades(3));
    expect(await metrics.registry.metrics()).toMatch(new RegExp(`tickfleet_spool_bytes ${spool.totalBytes}\\b`));
    expect(spool.totalBytes).toBeGreaterThan(0);
    await spool.close();
  });

  it('names TICKFLEET_SPOOL_DIR and the cause when the base is not a writable directory', () => {
    const file = dir.file('not-a-dir');
    writeFileSync(file, 'x');
    let err: unknown;
    try {
      openWorkerSpool(file);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toBe(`invalid configuration TICKFLEET_SPOOL_DIR: expected a writable directory (${file}: not a directory)`);
    expect(() => openWorkerSpool('/dev/null')).toThrow(/TICKFLEET_SPOOL_DIR.*\/dev\/null/);
  });

  const unsupported = tmpfsUnsupported();
  (unsupported ? it.skip : it)('on a full disk: one SpoolFullError naming the slot directory and ENOSPC, no slot left locked', () => {
    const fs = mountTmpfs(256 * 1024);
    try {
      fs.fill(0);
      let err: unknown;
      try {
        openWorkerSpool(join(fs.path, 'spool'));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SpoolFullError);
      const message = (err as SpoolFullError).message;
      expect(message).toContain(join(fs.path, 'spool'));
      expect(message).toMatch(/ENOSPC/);
      expect(message).toMatch(/TICKFLEET_SPOOL_DIR/);
      expect(existsSync(join(fs.path, 'spool', 'worker-0', 'spool.lock'))).toBe(false);
    } finally {
      fs.unmount();
    }
  });
});

describe('spoolHealthz', () => {
  let dir: TempDir;
  beforeEach(() => (dir = tempDir('worker-spool-')));
  afterEach(() => dir.remove());

  it('counts the segments holding records and the replay backlog, and says how old its oldest record is', async () => {
    const spool = openWorkerSpool(dir.path, { maxSegmentBytes: 1024 });
    try {
      expect(spoolHealthz(spool, true)).toEqual({
        spool: { dir: spool.dir, bytes: 0, maxBytes: spool.maxTotalBytes, maxSegmentBytes: 1024, onFull: spool.onFull, segments: 0 },
        replay: { running: true, backlogSegments: 0, backlogBytes: 0, oldestAgeMs: null },
      });
      // Enough records to rotate through several 1 KiB segments.
      for (let i = 0; i < 6; i++) await spool.append(trades(5));
      const onDisk = readdirSync(spool.dir).filter((f) => f.endsWith('.dat') && statSync(join(spool.dir, f)).size > 0).length;
      expect(onDisk).toBeGreaterThan(1);
      const health = spoolHealthz(spool, false);
      expect(health.spool).toMatchObject({ bytes: spool.totalBytes, segments: onDisk });
      expect(health.replay).toMatchObject({ running: false, backlogSegments: onDisk, backlogBytes: spool.totalBytes });
      expect(health.replay.oldestAgeMs).toBeGreaterThanOrEqual(0);
    } finally {
      await spool.close();
    }
  });
});
