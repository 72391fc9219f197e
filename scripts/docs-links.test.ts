/**
 * Every relative link and image in README.md and docs/**\/*.md resolves: the file or directory
 * exists, and an `#anchor` into a Markdown file names one of its headings by GitHub's slug rules.
 * Docs move and get renamed; a reader who follows a dead link learns nothing.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface Link {
  line: number;
  target: string;
}

/** The Markdown files a user reads: the README and everything under docs/. */
function markdownFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(ROOT, 'docs', f));
  return [join(ROOT, 'README.md'), ...docs.sort()];
}

/** Lines outside fenced code blocks, with their 1-based numbers: as written, and with inline code spans blanked. */
function proseLines(markdown: string): { line: number; raw: string; text: string }[] {
  const out: { line: number; raw: string; text: string }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((raw, i) => {
    const open = /^\s*(`{3,}|~{3,})/.exec(raw);
    if (fence !== undefined) {
      if (open && open[1]!.startsWith(fence)) fence = undefined;
      return;
    }
    if (open) {
      fence = open[1]!;
      return;
    }
    out.push({ line: i + 1, raw, text: raw.replace(/(`+)[^`]*?\1/g, '') });
  });
  return out;
}

/** Inline links and images `[text](target)` / `![alt](target)` and reference definitions `[id]: target`. */
function extractLinks(markdown: string): Link[] {
  const links: Link[] = [];
  for (const { line, text } of proseLines(markdown)) {
    for (const m of text.matchAll(/!?\[[^\]]*\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+"[^"]*")?\s*\)/g)) links.push({ line, target: m[1]!.replace(/^<|>$/g, '') });
    const def = /^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(text);
    if (def) links.push({ line, target: def[1]!.replace(/^<|>$/g, '') });
  }
  return links;
}

/**
 * GitHub's heading anchor (github-slugger): the heading's text as rendered, lower-cased, every
 * character but letters, marks, digits, `-`, `_` and spaces dropped, each space a `-`.
 */
function githubSlug(heading: string): string {
  // Code spans render their text as is (`<venue>` included); outside them, HTML tags render as nothing.
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .split(/(`+[^`]*?`+)/)
    .map((part, i) => (i % 2 === 1 ? part.replace(/`/g, '') : part.replace(/<[^>]+>/g, '')))
    .join('');
  return rendered
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\-_ ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a Markdown file offers: its headings' slugs (repeats get `-1`, `-2`, …) and explicit `<a id|name>`. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { raw, text } of proseLines(markdown)) {
    for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
    const h = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw);
    if (!h) continue;
    const base = githubSlug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** What is wrong with one link of `file`, or undefined when it resolves. */
function problem(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return undefined; // absolute URL
  const hash = target.indexOf('#');
  const pathPart = decodeURIComponent(hash >= 0 ? target.slice(0, hash) : target);
  const anchor = hash >= 0 ? decodeURIComponent(target.slice(hash + 1)) : undefined;
  if (pathPart.startsWith('/')) return 'absolute path: GitHub resolves it against the site, not the repository';
  const resolved = pathPart === '' ? file : resolve(dirname(file), pathPart);
  if (!existsSync(resolved)) return `${relative(ROOT, resolved)} does not exist`;
  if (anchor !== undefined && anchor !== '' && resolved.endsWith('.md') && !anchorsOf(readFileSync(resolved, 'utf8')).has(anchor))
    return `${relative(ROOT, resolved)} has no heading #${anchor}`;
  return undefined;
}

describe('links in README.md and docs/', () => {
  const files = markdownFiles();

  it('finds the documents and their links', () => {
    expect(files.length).toBeGreaterThan(10);
    const count = files.reduce((n, f) => n + extractLinks(readFileSync(f, 'utf8')).length, 0);
    expect(count).toBeGreaterThan(100);
  });

  it.each(files.map((f) => [relative(ROOT, f), f]))('%s: every relative link resolves', (_name, file) => {
    const broken = extractLinks(readFileSync(file, 'utf8'))
      .map(({ line, target }) => ({ line, target, problem: problem(file, target) }))
      .filter((l) => l.problem !== undefined);
    expect(broken).toEqual([]);
  });
});

describe('the link check itself', () => {
  it('reads inline links, images and reference definitions, not code', () => {
    const md = [
      'See [a](a.md#x) and ![img](img/p.png "title") and [b](<with space.md>).',
      '`[not](a-link.md)` and ``[nor](this.md)``',
      '```',
      '[inside](fence.md)',
      '```',
      '[ref]: ref.md#y',
      '| [in a table](t.md) |',
    ].join('\n');
    expect(extractLinks(md).map((l) => `${l.line}:${l.target}`)).toEqual(['1:a.md#x', '1:img/p.png', '1:with space.md', '6:ref.md#y', '7:t.md']);
  });

  it('slugs headings as GitHub does, repeats numbered', () => {
    expect(githubSlug('Budgets and venue control (`packages/budget`)')).toBe('budgets-and-venue-control-packagesbudget');
    expect(githubSlug('Budgets in Redis (`TICKFLEET_BUDGET_URL`)')).toBe('budgets-in-redis-tickfleet_budget_url');
    expect(githubSlug('Venue runners: caps, freezes, unit lines, shutdown')).toBe('venue-runners-caps-freezes-unit-lines-shutdown');
    expect(githubSlug("What a venue sees: clock windows against the library's own")).toBe('what-a-venue-sees-clock-windows-against-the-librarys-own');
    expect(githubSlug('Scale: 1, 2 and 4 worker processes')).toBe('scale-1-2-and-4-worker-processes');
    expect(githubSlug('Stream scenario (`streams.<binance|kraken>`)')).toBe('stream-scenario-streamsbinancekraken');
    expect(githubSlug('A <em>b</em> c')).toBe('a-b-c');
    expect([...anchorsOf('# T\n## Result\n```\n## not a heading\n```\n## Result\n<a id="here"></a>')].sort()).toEqual(['here', 'result', 'result-1', 't']);
  });

  it('reports a missing file and a missing heading', () => {
    const readme = join(ROOT, 'README.md');
    expect(problem(readme, 'docs/no-such-page.md')).toBe('docs/no-such-page.md does not exist');
    expect(problem(readme, 'docs/architecture.md#no-such-heading')).toBe('docs/architecture.md has no heading #no-such-heading');
    expect(problem(readme, 'docs/architecture.md#invariants')).toBeUndefined();
    expect(problem(readme, 'https://example.com/x.md#y')).toBeUndefined();
  });
});
