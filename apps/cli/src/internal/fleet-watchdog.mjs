// The supervisor `tickfleet up` starts first, in its own process group, talking to it over IPC.
// `up` registers every process it starts; when the IPC channel closes without a "done" message
// (up was killed with SIGKILL, or crashed), this process stops what up left behind: roles get
// time to notice on their own (they watch their parent and shut down as on SIGTERM), then are
// signalled, and Redis goes last so workers can still return their units. Plain JavaScript with
// no imports beyond node: it must start in milliseconds and depend on nothing that can break.
// Longer than a worker's SIGTERM grace (25 s) plus its shutdown, so roles normally stop on their own.
const ROLE_GRACE_MS = 40_000;
const KILL_AFTER_MS = 5000;

/** Role process groups (their leader's pid) and the single processes to stop last (redis-server). */
const groups = new Set();
const lastPids = new Set();
let done = false;

process.on('message', (msg) => {
  if (!msg || typeof msg !== 'object') return;
  if (msg.type === 'group' && Number.isInteger(msg.pid)) groups.add(msg.pid);
  else if (msg.type === 'last' && Number.isInteger(msg.pid)) lastPids.add(msg.pid);
  else if (msg.type === 'done') done = true;
});

process.on('disconnect', () => {
  if (done) process.exit(0);
  void reap().finally(() => process.exit(0));
});

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

function signal(pid, sig, group) {
  try {
    process.kill(group ? -pid : pid, sig);
  } catch {
    // already gone
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitGone(pids, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && [...pids].some(alive)) await sleep(200);
  return [...pids].filter(alive);
}

async function stop(pids, group, graceMs) {
  let left = await waitGone(pids, graceMs);
  for (const pid of left) signal(pid, 'SIGTERM', group);
  left = await waitGone(left, KILL_AFTER_MS);
  for (const pid of left) signal(pid, 'SIGKILL', group);
  await waitGone(left, KILL_AFTER_MS);
}

async function reap() {
  await stop(groups, true, ROLE_GRACE_MS);
  await stop(lastPids, false, 0);
}
