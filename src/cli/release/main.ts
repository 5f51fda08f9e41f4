import { parseInvocation, requestedFormat, type OutputSettings } from './args.js';
import { verifyAttestationCommand } from './attestation.js';
import { runCommand, type CommandResult } from './commands.js';
import { completionScript } from './completion.js';
import { CliError, ExitCode } from './errors.js';
import { ApiClient } from './http.js';
import { LiveView } from './live.js';
import { isDocumentFormat, type Command } from './options.js';
import { documentRenderer, Progress, type FollowSink, type Io } from './output.js';
import { packageVersion } from '../../packageVersion.js';

const PREFIX = 'cloudly-release';

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, ' ').trim();

/**
 * Where a followed rollout is shown. Table output: stdout — the live view on a terminal that
 * can move its cursor, else plain lines. `-o json|yaml`: stdout carries only the document, so
 * stderr — one line rewritten in place on a terminal, else plain lines.
 */
export function sinkFor (io: Io, output: OutputSettings, env: NodeJS.ProcessEnv): FollowSink {
  const dumb = env['TERM'] === 'dumb';
  if (isDocumentFormat(output.format)) return new Progress(io.stderr, { rewrite: io.stderr.isTTY === true && !dumb });
  if (io.stdout.isTTY === true && !dumb) return new LiveView(io.stdout, { color: output.color });
  return new Progress(io.stdout, { rewrite: false });
}

/**
 * Runs one command line; returns the exit code. Everything the command produces goes to
 * `io`: the result on stdout (one document with -o json|yaml), logs on stderr.
 */
export async function main (argv: string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  // Set once the output mode is known: log lines make room around what the sink has drawn.
  const live: { sink?: FollowSink } = {};
  const log = (line: string): void => {
    live.sink?.suspend();
    io.stderr.write(`${PREFIX}: ${oneLine(line)}\n`);
    live.sink?.resume();
  };
  const fail = async (err: unknown, command: Command | null, format: OutputSettings['format']): Promise<number> => {
    live.sink?.close();
    const error = err instanceof CliError
      ? err
      : new CliError({
        exitCode: ExitCode.refused,
        code: 'internal-error',
        message: `unexpected error (a bug in cloudly-release): ${err instanceof Error ? err.stack ?? err.message : String(err)}`,
      });
    const hint = error.exitCode === ExitCode.usage && error.code === 'usage' ? ` (see ${PREFIX} --help)` : '';
    io.stderr.write(`${PREFIX}: ${oneLine(error.message)}${hint}\n`);
    if (isDocumentFormat(format)) {
      const doc = { ok: false, command, exitCode: error.exitCode, error: { ...error.details, code: error.code, message: oneLine(error.message) } };
      io.stdout.write(`${(await documentRenderer(format))(doc)}\n`);
    }
    return error.exitCode;
  };

  let invocation;
  try {
    invocation = parseInvocation(argv, env);
  } catch (err) {
    return await fail(err, null, requestedFormat(argv));
  }
  switch (invocation.kind) {
    case 'help':
      io.stdout.write(`${invocation.text}\n`);
      return ExitCode.ok;
    case 'version':
      io.stdout.write(`${packageVersion() ?? 'unknown'}\n`);
      return ExitCode.ok;
    case 'completion':
      io.stdout.write(completionScript(invocation.shell));
      return ExitCode.ok;
    case 'attestation': {
      // Offline unless it fetches: a client only with a connection.
      const client = invocation.connection ? new ApiClient({ ...invocation.connection, log }) : undefined;
      try {
        const result = await verifyAttestationCommand({ ...(client ? { client } : {}), log }, invocation.args);
        return await writeResult(io, invocation.output.format, 'attestation', result);
      } catch (err) {
        return await fail(err, 'attestation', invocation.output.format);
      }
    }
    case 'run':
      break;
  }
  const { command, output, connection, args } = invocation;
  const sink = sinkFor(io, output, env);
  live.sink = sink;
  const client = new ApiClient({ ...connection, log });
  try {
    return await writeResult(io, output.format, command, await runCommand({ client, env, io, output, log, sink }, args));
  } catch (err) {
    return await fail(err, command, output.format);
  }
}

/** A command's result: one document on stdout (-o json|yaml), else its text (unless already shown, or empty). Returns its exit code. */
async function writeResult (io: Io, format: OutputSettings['format'], command: Command, result: CommandResult): Promise<number> {
  if (isDocumentFormat(format)) {
    const doc = { ok: result.exitCode === ExitCode.ok, command, exitCode: result.exitCode, ...result.json };
    io.stdout.write(`${(await documentRenderer(format))(doc)}\n`);
    // The CI log should say why without parsing the document (unless the sink already said it on stderr).
    if (result.exitCode !== ExitCode.ok && !result.shown) for (const line of result.text.split('\n')) io.stderr.write(`${PREFIX}: ${line}\n`);
  } else if (!result.shown && result.text !== '') {
    // '' is an empty -o name listing: nothing at all on stdout, so `| xargs` gets no blank line.
    io.stdout.write(`${result.text}\n`);
  }
  return result.exitCode;
}
