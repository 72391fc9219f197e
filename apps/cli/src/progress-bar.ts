import { formatDurationMs } from '@tickfleet/core';

/** A one-line progress bar with rate and ETA, redrawn in place on a TTY stream. */
export class ProgressBar {
  private readonly startedAt = Date.now();
  private lastDrawAt = 0;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly unit: string,
  ) {}

  update(done: number, total: number | undefined): void {
    const now = Date.now();
    if (now - this.lastDrawAt < 100 && done !== total) return;
    this.lastDrawAt = now;
    const elapsedS = Math.max(0.001, (now - this.startedAt) / 1000);
    const rate = done / elapsedS;
    const width = 30;
    let line: string;
    if (total && total > 0) {
      const ratio = Math.min(1, done / total);
      const filled = Math.round(ratio * width);
      const eta = rate > 0 ? formatDurationMs(((total - done) / rate) * 1000) : '?';
      line = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(ratio * 100).toFixed(1)}% ${done}/${total} ${this.unit} ${rate.toFixed(1)}/s ETA ${eta}`;
    } else {
      line = `${done} ${this.unit} ${rate.toFixed(1)}/s`;
    }
    this.stream.write(`\r${line}\x1b[K`);
  }

  finish(): void {
    this.stream.write('\n');
  }
}
