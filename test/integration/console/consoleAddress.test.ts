import { beforeEach, describe, expect, it } from 'vitest';
import { inPage, signedIn } from './browser.js';
import { consoleHarness } from '../console/harness.js';

/**
 * Found by an independent acceptance run (the tests failed on the code before their fix).
 * Acceptance run 5. docs/console.md "Where it is": addresses inside the page are hash routes, "so
 * they can be bookmarked and shared", `/console/#/services/<serviceId>` being one service. The router
 * (src/console/public/app.js `route`) runs `decodeURIComponent` on the id part unguarded: an address
 * with a malformed percent-escape (a truncated paste of a shared link, `#/services/svc_%E0%A4%A`)
 * throws `URIError: URI malformed` out of the hashchange handler / the page start. The page then
 * shows nothing at all (no heading, no message, no way back but editing the address), and the
 * harness' rule "no uncaught error in the page" is broken. Expected: a page that says the service
 * cannot be found (as for any other unknown id), with the link back to every service.
 */
describe('console: a shared address with a malformed escape', () => {
  const harness = consoleHarness();
  let stage: typeof harness.stage;
  beforeEach(() => { stage = harness.stage; });

  it('opens a page (a heading, no uncaught error) for #/services/<id with a bad %-escape>', async () => {
    const cp = await harness.open();
    await signedIn(cp, stage.base, stage.admin, '#/');
    // A page with a heading for every address, or the page's first uncaught error: whichever comes first.
    const pageError = new Promise<string>((resolve) => { cp.page.once('pageerror', (err) => { resolve(`page error: ${String(err)}`); }); });
    await cp.page.goto(`${stage.base}/console/#/services/svc_%E0%A4%A`);
    await cp.page.reload();
    const outcome = await Promise.race([
      cp.page.waitForSelector('#view h1', { visible: true, timeout: 15_000 }).then(() => 'drawn'),
      pageError,
    ]);
    expect(outcome, 'the page for the address').toBe('drawn');
    expect(cp.problems.splice(0), 'uncaught errors in the page').toEqual([]);
    expect(await inPage<string | null>(cp.page, 'document.querySelector("#view h1")?.textContent ?? null')).not.toBeNull();
  }, 60_000);
});
