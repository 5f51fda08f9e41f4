#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import type { ConformanceReport } from './domain/ports/database.js';
import { conformanceBoundMs, ConformanceTimeout, InvalidConnectionString, probeConformance } from './store/index.js';

/**
 * `npm run check-database -- --uri mongodb://…` (in the image: `node dist/src/checkDatabase.js`): the
 * database conformance check the server runs before it listens, pointed at any server — before a
 * migration, to qualify a managed service (docs/operations.md "Database compatibility"). Composed like
 * src/server.ts: configuration, then the store; it imports neither the app nor the HTTP adapters.
 *
 * Exit codes as the server's start-up: 0 accepted (a table of the checks on stdout), 4 refused (one
 * line on stderr: `database refused: <guarantee>: <what the server did>`), 2 usage or configuration,
 * 1 not concluded (the database did not answer).
 */

const EXIT_ACCEPTED = 0;
const EXIT_NOT_CONCLUDED = 1;
const EXIT_USAGE = 2;
const EXIT_REFUSED = 4;

const usage = `usage: npm run check-database -- [--uri mongodb://…] [--db NAME] [--json]

Checks that a MongoDB-compatible server keeps the guarantees the control plane rests on
(single-document atomicity, unique indexes, the commands the store uses), in scratch
collections of database NAME that it creates and drops. Without --uri: MONGODB_URI (or
MONGODB_URI_FILE); without --db: MONGODB_DB (default cloudly_release).
--json prints the report as JSON on stdout (also when the database is refused).
Exit codes: 0 accepted, 4 refused, 1 not concluded (the database did not answer), 2 usage.`;

interface Io { stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream }

function parse (argv: string[], io: Io): { uri?: string, db?: string, json: boolean } | number {
  try {
    const { values } = parseArgs({
      args: argv,
      options: { uri: { type: 'string' }, db: { type: 'string' }, json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    });
    if (values.help === true) {
      io.stdout.write(`${usage}\n`);
      return EXIT_ACCEPTED;
    }
    return { uri: values.uri, db: values.db, json: values.json };
  } catch (err) {
    io.stderr.write(`check-database: ${(err as Error).message}\n${usage}\n`);
    return EXIT_USAGE;
  }
}

/** The checks as a table: guarantee, check, result, what the server did. */
function reportTable (report: ConformanceReport): string {
  const rows = [['guarantee', 'check', 'result', 'what the server did'], ...report.checks.map((c) => [c.guarantee, c.check, c.outcome, c.detail])];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  const lines = rows.map((row) => row.map((cell, column) => (column < 3 ? cell.padEnd(widths[column] ?? 0) : cell)).join('  ').trimEnd());
  const degraded = report.checks.filter((c) => c.outcome === 'degraded').map((c) => c.guarantee);
  const verdict = report.refused !== undefined
    ? `database refused: ${report.refused.guarantee}: ${report.refused.detail}`
    : `database accepted${degraded.length === 0 ? '' : ` (degraded: ${degraded.join(', ')})`}`;
  return [`database check: ${report.server}, ${report.elapsedMs} ms`, ...lines, verdict].join('\n');
}

async function check (argv: string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  const args = parse(argv, io);
  if (typeof args === 'number') return args;
  // The options stand for their variables, and are validated as they are (a message names the option).
  const source: NodeJS.ProcessEnv = { ...env };
  if (args.uri !== undefined) Object.assign(source, { MONGODB_URI: args.uri, MONGODB_URI_FILE: undefined });
  if (args.db !== undefined) source['MONGODB_DB'] = args.db;
  let config;
  try {
    config = loadConfig(source);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const message = err.message.replace(/^MONGODB_URI:/, args.uri === undefined ? 'MONGODB_URI:' : '--uri:')
      .replace(/^MONGODB_DB:/, args.db === undefined ? 'MONGODB_DB:' : '--db:');
    io.stderr.write(`check-database: configuration error: ${message}\n`);
    return EXIT_USAGE;
  }
  if (config.MONGODB_URI === undefined) {
    io.stderr.write('check-database: no database to check: give --uri, or set MONGODB_URI (or MONGODB_URI_FILE)\n');
    return EXIT_USAGE;
  }
  const timeoutMs = config.MONGODB_TIMEOUT_MS;
  let report: ConformanceReport;
  try {
    report = await probeConformance({
      uri: config.MONGODB_URI,
      dbName: config.MONGODB_DB,
      clientOptions: { appName: 'cloudly-release-check-database', serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs },
      timeoutMs: conformanceBoundMs(timeoutMs),
    });
  } catch (err) {
    if (err instanceof InvalidConnectionString) {
      io.stderr.write(`check-database: configuration error: ${args.uri === undefined ? 'MONGODB_URI' : '--uri'}: ${err.message}\n`);
      return EXIT_USAGE;
    }
    const why = err instanceof ConformanceTimeout ? err.message : `the database did not answer (${(err as Error).message.slice(0, 200)})`;
    io.stderr.write(`database check not concluded: ${why}\n`);
    return EXIT_NOT_CONCLUDED;
  }
  if (args.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (report.refused !== undefined) {
    io.stderr.write(`database refused: ${report.refused.guarantee}: ${report.refused.detail}\n`);
    return EXIT_REFUSED;
  }
  if (!args.json) io.stdout.write(`${reportTable(report)}\n`);
  return EXIT_ACCEPTED;
}

const code = await check(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr });
await new Promise<void>((resolve) => { process.stdout.write('', () => { resolve(); }); });
process.exit(code);
