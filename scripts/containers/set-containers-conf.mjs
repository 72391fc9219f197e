// Sets `section.key=value` lines in a containers.conf (TOML), keeping every other line: a key
// already set in its section is replaced, a missing one is added under its section header.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const [file, ...settings] = process.argv.slice(2);
const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
for (const setting of settings) {
  const [, section, key, value] = /^(\w+)\.(\w+)=(.*)$/.exec(setting) ?? [];
  if (!section) throw new Error(`not section.key=value: ${setting}`);
  let header = lines.findIndex((l) => l.trim() === `[${section}]`);
  if (header < 0) {
    lines.push('', `[${section}]`);
    header = lines.length - 1;
  }
  let end = lines.findIndex((l, i) => i > header && /^\s*\[/.test(l));
  if (end < 0) end = lines.length;
  const at = lines.findIndex((l, i) => i > header && i < end && new RegExp(`^\\s*${key}\\s*=`).test(l));
  if (at >= 0) lines[at] = `${key} = ${value}`;
  else lines.splice(header + 1, 0, `${key} = ${value}`);
}
writeFileSync(file, `${lines.join('\n').trim()}\n`);
