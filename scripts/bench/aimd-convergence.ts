/**
 * AIMD convergence benchmark: the fleet polls every Limitless order book once a second while the
 * emulation's opaque limit loosens, tightens and loosens again; the connector's budget is far
 * above it, so only AIMD (with its default 30 s adjustment interval and stable period unless
 * given) keeps the fleet under it. Prints, per phase, 429s per 1,000 requests, the throughput
 * achieved against the sustainable one (min(limit, instruments per second)) and the concurrency.
 *
 *   node --import tsx scripts/bench/aimd-convergence.ts [--interval 30s] [--stable 30s] [--requests 1500] [--latency 500]
 */
import { runAimdConvergence } from '../chaos/fixtures/aimd-run.js';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const requests = Number(arg('requests', '1500'));
const { phases, slugs } = await runAimdConvergence({
  markets: 24,
  latencyMs: Number(arg('latency', '500')),
  maxInflight: 8,
  aimd: `min=1,interval=${arg('interval', '30s')},stable=${arg('stable', '30s')}`,
  phases: [
    { name: 'loose', limitPerSecond: 1000, requests },
    { name: 'tight', limitPerSecond: 10, requests },
    { name: 'tighter', limitPerSecond: 5, requests },
    { name: 'loose again', limitPerSecond: 12, requests },
  ],
  log: (line) => console.log(line),
});
const total = phases.reduce((a, p) => ({ requests: a.requests + p.requests, r429: a.r429 + p.responses429 }), { requests: 0, r429: 0 });
console.log(`${slugs} instruments; overall ${total.requests} requests, ${total.r429} 429s = ${((1000 * total.r429) / total.requests).toFixed(1)} per 1,000`);
