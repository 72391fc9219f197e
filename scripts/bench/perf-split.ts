/**
 * Splits the worker processes' CPU in a system-wide `perf record` of fleet-scale.ts by library
 * (V8 and Node's runtime in the `node` binary, JIT-compiled JavaScript, the kernel, SQLite, libc)
 * and by symbol, per unit, over each measured window that `fleet-scale.ts --windows FILE` wrote.
 * It shows what grows when a fleet has more worker processes, which a V8 `.cpuprofile` cannot:
 * the kernel's share (context switches, socket and file syscalls, SQLite's file locks) and the
 * V8 optimizing compiler's background threads.
 *
 *   perf record -a -k CLOCK_MONOTONIC -F 497 -o PERF.data -- \
 *     node --import tsx scripts/bench/fleet-scale.ts --workers 1,4 --jobs 30000 --windows WINDOWS.jsonl
 *   node --import tsx scripts/bench/perf-split.ts PERF.data WINDOWS.jsonl [--top 25]
 *
 * `-k CLOCK_MONOTONIC` is required: the windows are in that clock (process.hrtime). Needs `perf`
 * (Debian: linux-perf) and perf_event_paranoid <= 0 or root for `-a`. Each sample is weighted by its
 * period (cpu-clock: the nanoseconds it stands for).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { positiveIntArg } from './fixtures/args.js';

interface Window {
  workers: number;
  /** fleet-scale's `--sched` variant (absent in files written before it existed). */
  sched?: string;
  round: number;
  pids: number[];
  from: number;
  to: number;
  units: number;
}

interface Split {
  window: Window;
  /** ns of CPU over the window, all worker threads. */
  totalNs: number;
  mainNs: number;
  byDso: Map<string, number>;
  bySymbol: Map<string, number>;
}

const args = process.argv.slice(2);
const [data, windowsFile] = args;
if (!data || !windowsFile || data.startsWith('--') || windowsFile.startsWith('--')) {
  process.stderr.write('usage: perf-split.ts PERF.data WINDOWS.jsonl [--top 25]\n');
  process.exit(2);
}
const top = positiveIntArg(args, 'top', 25);

const windows: Window[] = readFileSync(windowsFile, 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l, i) => {
    let w: Window;
    try {
      w = JSON.parse(l) as Window;
    } catch {
      throw new Error(`${windowsFile}:${i + 1}: not JSON: ${l.slice(0, 80)}`);
    }
    if (!Array.isArray(w.pids) || !(w.to > w.from) || !(w.units > 0)) throw new Error(`${windowsFile}:${i + 1}: not a fleet-scale window: ${l}`);
    return w;
  });
const splits: Split[] = windows.map((window) => ({ window, totalNs: 0, mainNs: 0, byDso: new Map(), bySymbol: new Map() }));
const byPid = new Map<number, Split[]>();
for (const s of splits) for (const pid of s.window.pids) byPid.set(pid, [...(byPid.get(pid) ?? []), s]);

/** One library per group: JIT code maps (perf-<pid>.map, [JIT] tid) are one, whatever the pid. */
function dsoGroup(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (name.startsWith('perf-') || name.startsWith('[JIT]') || name === 'unknown') return 'JIT-compiled JavaScript';
  if (name === 'node') return 'node (V8, Node runtime, builtins)';
  return name;
}
const add = (m: Map<string, number>, k: string, v: number): void => void m.set(k, (m.get(k) ?? 0) + v);

// `  1234/1240 62499.116160:     250000      7fcc... symbol name (/path/to/dso)`
const LINE = /^\s*(\d+)\/(\d+)\s+([\d.]+):\s+(\d+)\s+\S+\s+(.*?)\s+\(([^()]*)\)\s*$/;
const perf = spawn('perf', ['script', '-i', data, '-F', 'pid,tid,time,period,ip,sym,dso'], { stdio: ['ignore', 'pipe', 'inherit'] });
perf.once('error', (err) => {
  process.stderr.write(`perf-split: cannot run \`perf script\` (${err.message}); install perf (Debian: linux-perf)\n`);
  process.exit(1);
});
let unparsed = 0;
for await (const line of createInterface({ input: perf.stdout })) {
  const m = LINE.exec(line);
  if (!m) {
    if (line.trim()) unparsed++;
    continue;
  }
  const pid = Number(m[1]);
  const candidates = byPid.get(pid);
  if (!candidates) continue;
  const time = Number(m[3]);
  const split = candidates.find((s) => time >= s.window.from && time < s.window.to);
  if (!split) continue;
  const ns = Number(m[4]);
  const dso = dsoGroup(m[6]!);
  split.totalNs += ns;
  if (m[2] === m[1]) split.mainNs += ns;
  add(split.byDso, dso, ns);
  add(split.bySymbol, `${dso.split(' ')[0]}  ${m[5] || '[unknown]'}`, ns);
}
const code = await new Promise<number | null>((resolve) => perf.once('close', resolve));
if (code !== 0) throw new Error(`perf script exited with ${code}`);
if (splits.every((s) => s.totalNs === 0))
  throw new Error('no worker samples inside any window: was perf recorded with -a -k CLOCK_MONOTONIC over the same fleet-scale run?');

const perUnit = (ns: number, s: Split): string => (ns / 1000 / s.window.units).toFixed(1);
for (const s of splits) {
  const w = s.window;
  console.log(
    `\n## ${w.workers} worker process${w.workers > 1 ? 'es' : ''}${w.sched && w.sched !== 'other' ? ` (${w.sched})` : ''}, round ${w.round}: ${w.units} units in ${(w.to - w.from).toFixed(1)} s; worker CPU ${perUnit(s.totalNs, s)} µs/unit (main threads ${perUnit(s.mainNs, s)}, other threads ${perUnit(s.totalNs - s.mainNs, s)})`,
  );
  console.log('\n| library | µs/unit | share |\n| --- | ---: | ---: |');
  for (const [dso, ns] of [...s.byDso].sort((a, b) => b[1] - a[1])) console.log(`| ${dso} | ${perUnit(ns, s)} | ${((100 * ns) / s.totalNs).toFixed(1)}% |`);
  const compiler = [...s.bySymbol].filter(([k]) => k.includes('v8::internal::compiler::')).reduce((sum, [, ns]) => sum + ns, 0);
  console.log(`\nV8's optimizing compiler (v8::internal::compiler::*, any thread): ${perUnit(compiler, s)} µs/unit`);
  console.log(`\n| top symbols | µs/unit |\n| --- | ---: |`);
  for (const [sym, ns] of [...s.bySymbol].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`| \`${sym.replace(/\|/g, '\\|')}\` | ${perUnit(ns, s)} |`);
}
if (unparsed > 0) process.stderr.write(`note: ${unparsed} perf script lines not understood\n`);
