import { parseInvocation, type Command } from './args.js';
import { runCommand } from './commands.js';
import { CliError, ExitCode } from './errors.js';
import { ApiClient } from './http.js';
import { Progress, type Io } from './output.js';

const PREFIX = 'cloudly-release';

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, ' ').trim();

/**
 * Runs one command line; returns the exit code. Everything the command produces goes to
 * `io`: the result on stdout (one JSON document with --json), logs on stderr.
 */
export async function main (argv: string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  // Set once the output mode is known; log lines end a live progress line first.
  const live: { progress?: Progress } = {};
  const log = (line: string): void => {
    live.progress?.break();
    io.stderr.write(`${PREFIX}: ${oneLine(line)}\n`);
  };
  const fail = (err: unknown, command: Command | null, json: boolean): number => {
    live.progress?.break();
    const error = err instanceof CliError
      ? err
      : new CliError(ExitCode.refused, 'internal-error', `unexpected error (a bug in cloudly-release): ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    io.stderr.write(`${PREFIX}: ${oneLine(error.message)}${error.exitCode === ExitCode.usage && error.code === 'usage' ? ` (see ${PREFIX} --help)` : ''}\n`);
    if (json) {
      io.stdout.write(`${JSON.stringify({
        ok: false,
        command,
        exitCode: error.exitCode,
        error: { ...error.details, code: error.code, message: oneLine(error.message) },
      })}\n`);
    }
    return error.exitCode;
  };

  let invocation;
  try {
    invocation = parseInvocation(argv, env);
  } catch (err) {
    return fail(err, null, argv.includes('--json'));
  }
  if (invocation.kind === 'help') {
    io.stdout.write(`${invocation.text}\n`);
    return ExitCode.ok;
  }
  const { command, json, connection, args } = invocation;
  const progress = new Progress(json ? io.stderr : io.stdout);
  live.progress = progress;
  const client = new ApiClient({ ...connection, log });
  try {
    const result = await runCommand({ client, env, io, json, log, progress }, args);
    progress.break();
    if (json) {
      io.stdout.write(`${JSON.stringify({ ok: result.exitCode === ExitCode.ok, command, exitCode: result.exitCode, ...result.json })}\n`);
      // The CI log should say why without parsing the JSON.
      if (result.exitCode !== ExitCode.ok) for (const line of result.text.split('\n')) io.stderr.write(`${PREFIX}: ${line}\n`);
    } else {
      io.stdout.write(`${result.text}\n`);
    }
    return result.exitCode;
  } catch (err) {
    return fail(err, command, json);
  }
}
