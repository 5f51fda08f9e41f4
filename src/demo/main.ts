#!/usr/bin/env node
/**
 * `npm run demo`: a demo fleet against a running control plane (docs/demo.md). An HTTP
 * client of the server like any other: it loads none of the server's code, only the
 * public contracts and the development-secret helper.
 */
import { createApi, ProblemError, UnreachableError } from './api.js';
import { parseDemoArgs, usageText, type DemoOptions } from './args.js';
import { loadDemoConfig } from './config.js';
import { DemoError, ExitCode } from './errors.js';
import { fleetSpec } from './fleet.js';
import { createOutput, type Output, type Streams } from './output.js';
import { runDemo } from './run.js';
import { resolveSwitches } from './switches.js';

/** Maps what ended the demo early to one line and an exit code. */
function failureOf (err: unknown): { exitCode: ExitCode, message: string } {
  if (err instanceof DemoError) return { exitCode: err.exitCode, message: err.message };
  if (err instanceof UnreachableError) return { exitCode: ExitCode.unreachable, message: `${err.message}: is the server still running (\`npm start\`)?` };
  if (err instanceof ProblemError && err.status === 401) {
    const hint = 'run the demo with the AUTH_JWT_SECRET or DATA_DIR the server uses';
    return { exitCode: ExitCode.usage, message: `the server refused the demo's token (${err.message}): ${hint}` };
  }
  if (err instanceof ProblemError) return { exitCode: ExitCode.unexpected, message: `the server refused a request: ${err.message}` };
  return { exitCode: ExitCode.unexpected, message: `internal error: ${(err as Error).stack ?? String(err)}` };
}

function fail (err: unknown, out: Output | undefined, streams: Streams): ExitCode {
  const { exitCode, message } = failureOf(err);
  streams.stderr.write(`demo: ${message}\n`);
  out?.summary({ ok: false, exitCode, error: { message } });
  return exitCode;
}

/** SIGINT / SIGTERM abort the returned signal: the demo stops its agents and exits cleanly. */
function interruptSignal (): { signal: AbortSignal, dispose: () => void } {
  const controller = new AbortController();
  const onSignal = (): void => { controller.abort(); };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

async function main (argv: string[], env: NodeJS.ProcessEnv, streams: Streams): Promise<ExitCode> {
  let options: DemoOptions;
  try {
    options = parseDemoArgs(argv);
  } catch (err) {
    return fail(err instanceof DemoError ? new DemoError(err.exitCode, `${err.message} (see --help)`) : err, undefined, streams);
  }
  if (options.help) {
    streams.stdout.write(`${usageText}\n`);
    return ExitCode.ok;
  }
  const out = createOutput(options.json, streams);
  const interrupt = interruptSignal();
  try {
    const config = await loadDemoConfig(env);
    const spec = fleetSpec(options.name, options.stabilityWindowSeconds);
    const switches = resolveSwitches(spec, options);
    const api = createApi(config.baseUrl, config.tokens);
    const summary = await runDemo({ api, spec, out, options, switches, signal: interrupt.signal, ...(config.dataDir ? { dataDir: config.dataDir } : {}) });
    out.summary(summary);
    return summary.exitCode;
  } catch (err) {
    return fail(err, options.json ? out : undefined, streams);
  } finally {
    interrupt.dispose();
  }
}

const code = await main(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr });
// Flush, then exit at once: an idle keep-alive socket of fetch must not hold the process.
await new Promise<void>((resolve) => { process.stdout.write('', () => { resolve(); }); });
await new Promise<void>((resolve) => { process.stderr.write('', () => { resolve(); }); });
process.exit(code);
