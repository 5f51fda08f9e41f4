#!/usr/bin/env node
/**
 * cloudly-release: promote, roll back and follow rollouts from CI. See docs/cli.md
 * (`cloudly-release --help` for the flags). The code lives in ./release/.
 */
import { main } from './release/main.js';

// AbortSignal.timeout() timers do not keep the event loop alive: while a request waits on a
// socket that went quiet, nothing else might, and Node would end with "unsettled top-level
// await" (exit 13) instead of timing out and retrying. Hold the loop open until main is done.
const keepAlive = setInterval(() => {}, 60_000);
const code = await main(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr });
clearInterval(keepAlive);
// Flush what was written, then exit at once: an open keep-alive socket must not hold the process.
await new Promise<void>((resolve) => { process.stdout.write('', () => { resolve(); }); });
await new Promise<void>((resolve) => { process.stderr.write('', () => { resolve(); }); });
process.exit(code);
