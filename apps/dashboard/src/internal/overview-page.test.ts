import type { OverviewConfig } from './overview-page.js';
import { overviewAssets, overviewPage } from './overview-page.js';

/** The configuration the page carries, read back the way its script reads it (the JSON element's text). */
function configOf(html: string): OverviewConfig {
  const match = /<script type="application\/json" id="overview-config">(.*?)<\/script>/.exec(html);
  if (!match) throw new Error('no #overview-config element in the page');
  return JSON.parse(match[1]!) as OverviewConfig;
}

describe('overviewPage', () => {
  it('carries its configuration as JSON data, redrawing the charts at most once a second', () => {
    const html = overviewPage({ queuesPath: '/queues', refreshMs: 500, historyIntervalMs: 250, readOnly: false });
    expect(configOf(html)).toEqual({ queuesPath: '/queues', refreshMs: 500, historyRefreshMs: 1000, historyIntervalMs: 250, readOnly: false });
    expect(html).toContain('<script type="module" src="assets/overview.js"></script>');
    expect(html).toContain('<link rel="stylesheet" href="assets/overview.css" />');
  });

  it('keeps a value that contains markup inside the JSON element', () => {
    const queuesPath = '/q</script><script>alert(1)</script>';
    const html = overviewPage({ queuesPath, refreshMs: 2000, historyIntervalMs: 5000, readOnly: true });
    expect(configOf(html).queuesPath).toBe(queuesPath);
    expect(html).not.toContain('<script>alert(1)');
  });
});

describe('overviewAssets', () => {
  it('builds the page script into one self-contained browser module, once per process', async () => {
    const assets = await overviewAssets();
    expect(assets.map((a) => [a.path, a.contentType, a.cacheControl])).toEqual([
      ['/assets/overview.js', 'text/javascript; charset=utf-8', 'no-cache'],
      ['/assets/overview.css', 'text/css; charset=utf-8', 'no-cache'],
    ]);
    const script = assets[0]!.body.toString('utf8');
    // The client's own modules inlined, its type imports (server types, uPlot's) erased: nothing left to fetch.
    expect(script).not.toMatch(/^\s*(import|export)\b/m);
    expect(script).toContain('fetch("api/status"');
    expect(script).toContain('fetch("api/history?minutes="');
    // Small: a value import of server code would bundle the server's dependencies into the page.
    expect(assets[0]!.body.length).toBeLessThan(64 * 1024);
    expect(assets[1]!.body.toString('utf8')).toContain('.venue-charts');
    expect(await overviewAssets()).toBe(assets);
  });
});
