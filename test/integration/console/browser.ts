import { mkdir, writeFile } from 'node:fs/promises';
import chromium from '@sparticuz/chromium';
import puppeteer, { type Browser, type HTTPRequest, type Page } from 'puppeteer-core';
import { expect } from 'vitest';

/**
 * A real browser for the console tests: the Chromium build of @sparticuz/chromium (a devDependency,
 * unpacked to /tmp on first use), driven by puppeteer-core. Headless, no network beyond the server.
 */
export async function launchBrowser (): Promise<Browser> {
  const executablePath = await chromium.executablePath();
  return puppeteer.launch({
    executablePath,
    headless: true,
    args: [...chromium.args, '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

export interface ConsolePage {
  page: Page;
  /** Uncaught exceptions and Content-Security-Policy violations seen by the page: must stay empty. */
  problems: string[];
  /** Every request the page made (method, url, headers, body), oldest first. */
  requests: Array<{ method: string, url: string, headers: Record<string, string>, body: string | undefined }>;
}

/** A fresh page at 1280×800 that records its errors, CSP violations and requests. */
export async function openPage (browser: Browser): Promise<ConsolePage> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const problems: string[] = [];
  const requests: ConsolePage['requests'] = [];
  page.on('pageerror', (err) => { problems.push(`page error: ${err instanceof Error ? err.message : String(err)}`); });
  page.on('request', (request: HTTPRequest) => {
    requests.push({ method: request.method(), url: request.url(), headers: request.headers(), body: request.postData() });
  });
  // Runs before the page's own scripts (through the DevTools protocol, not an inline script).
  await page.evaluateOnNewDocument(`document.addEventListener('securitypolicyviolation', (e) => {
    console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI);
  });`);
  page.on('console', (message) => { if (message.text().startsWith('CSP violation')) problems.push(message.text()); });
  return { page, problems, requests };
}

/** Opens the console (at `hash`) and signs in through the token form when it asks. */
export async function signedIn (cp: ConsolePage, base: string, jwt: string, hash = '#/'): Promise<void> {
  await cp.page.goto(`${base}/console/${hash}`);
  const form = await cp.page.waitForSelector('#login:not([hidden]), #view h1', { visible: true });
  if (await form?.evaluate((el) => el.id === 'login')) {
    await cp.page.type('#token', jwt);
    await cp.page.click('#login-form button[type="submit"]');
  }
  await cp.page.waitForSelector('#view h1', { visible: true });
}

// The project's TypeScript has no DOM library (src/ runs on Node), so code that runs inside the page
// is written as expressions (strings) or as $eval callbacks whose elements are typed structurally.

/** Evaluates a JavaScript expression in the page. */
export const inPage = <T>(page: Page, expression: string): Promise<T> => page.evaluate(expression) as Promise<T>;

const q = (selector: string): string => `document.querySelector(${JSON.stringify(selector)})`;

/** Waits until `expression` is true in the page; on timeout, says what `actual` shows instead. */
export async function waitUntil (page: Page, expression: string, what: string, actual: string, timeout: number): Promise<void> {
  try {
    await page.waitForFunction(expression, { timeout });
  } catch (err) {
    throw new Error(`${what} (it is ${JSON.stringify(await inPage(page, actual))})`, { cause: err });
  }
}

/** Waits until `selector`'s `attribute` is `value`. */
export const waitForAttribute = (page: Page, selector: string, attribute: string, value: string, timeout = 15_000): Promise<void> =>
  waitUntil(page, `${q(selector)}?.getAttribute(${JSON.stringify(attribute)}) === ${JSON.stringify(value)}`,
    `${selector} [${attribute}] did not become "${value}"`, `${q(selector)}?.getAttribute(${JSON.stringify(attribute)}) ?? '(no such element)'`, timeout);

/** Waits until `selector`'s text contains `text`. */
export const waitForText = (page: Page, selector: string, text: string, timeout = 15_000): Promise<void> =>
  waitUntil(page, `${q(selector)}?.textContent?.includes(${JSON.stringify(text)}) === true`,
    `${selector} does not show "${text}"`, `${q(selector)}?.textContent ?? '(no such element)'`, timeout);

/** The grid as `{ "<node>#<slot>": state }` (extras as `<node>+<deploymentId>`). */
export const gridStates = (page: Page): Promise<Record<string, string>> => page.$$eval('#grid button.cell', (cells) =>
  Object.fromEntries(cells.map((b: { getAttribute(name: string): string | null }) => [b.getAttribute('data-key') ?? '', b.getAttribute('data-state') ?? ''])));

/** Waits until every listed cell has its state. */
export const waitForGrid = (page: Page, expected: Record<string, string>, timeout = 15_000): Promise<void> =>
  waitUntil(page, Object.entries(expected).map(([key, state]) =>
    `${q(`#grid button.cell[data-key="${key}"]`)}?.getAttribute('data-state') === ${JSON.stringify(state)}`).join(' && '),
  `grid did not become ${JSON.stringify(expected)}`,
  "Object.fromEntries([...document.querySelectorAll('#grid button.cell')].map((b) => [b.dataset.key, b.dataset.state]))", timeout);

export const cellLabel = (page: Page, key: string): Promise<string> =>
  page.$eval(`#grid button.cell[data-key="${key}"]`, (b: { getAttribute(name: string): string | null }) => b.getAttribute('aria-label') ?? '');

/** The `data-focus-key`/`data-key`/`id`/`href` of the focused element. */
export const focused = (page: Page): Promise<string | null> => inPage(page,
  "document.activeElement?.dataset?.key ?? document.activeElement?.getAttribute('href') ?? document.activeElement?.id ?? null");

/**
 * A screenshot of the page as it is: always taken (and checked to be a PNG of the viewport);
 * written to docs/images/<name>.png when UPDATE_SCREENSHOTS is set, so `npm test` leaves the tree clean.
 */
export async function screenshot (page: Page, name: string): Promise<void> {
  const png = Buffer.from(await page.screenshot({ type: 'png' }));
  expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
  expect(png.readUInt32BE(16)).toBe(1280);
  if (!process.env['UPDATE_SCREENSHOTS']) return;
  const dir = new URL('../../../docs/images/', import.meta.url);
  await mkdir(dir, { recursive: true });
  await writeFile(new URL(`${name}.png`, dir), png);
}

/** The WCAG 2 contrast ratio of each matched element's text colour against the first opaque background behind it. */
export const textContrast = (page: Page, selector: string): Promise<Array<{ text: string, ratio: number }>> => inPage(page, `(() => {
  const rgba = (c) => (c.match(/[\\d.]+/g) ?? []).map(Number);
  const channel = (v) => { const c = v / 255; return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const luminance = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const backdrop = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || c[3] > 0) return c;
    }
    return [255, 255, 255];
  };
  return [...document.querySelectorAll(${JSON.stringify(selector)})].filter((el) => el.textContent.trim() !== '').map((el) => {
    const [hi, lo] = [luminance(rgba(getComputedStyle(el).color)), luminance(backdrop(el))].sort((a, b) => b - a);
    return { text: el.textContent, ratio: (hi + 0.05) / (lo + 0.05) };
  });
})()`);
