/**
 * Where the demo writes: progress lines to stdout, or — with `--json` — to stderr, so that
 * stdout carries exactly one JSON document at the end.
 */
export interface Output {
  line(text: string): void;
  /** The final summary: a JSON document with --json, else nothing more (the lines said it). */
  summary(doc: Record<string, unknown>): void;
}

export interface Streams {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

export function createOutput (json: boolean, streams: Streams): Output {
  const progress = json ? streams.stderr : streams.stdout;
  return {
    line: (text) => { progress.write(`${text}\n`); },
    summary: (doc) => { if (json) streams.stdout.write(`${JSON.stringify(doc)}\n`); },
  };
}

/** `sha256:1a2b3c4d5e6f…`: enough of a digest to tell two apart in a console line. */
export const shortDigest = (digest: string): string => `${digest.slice(0, 19)}…`;

export const seconds = (ms: number): string => `${Number((ms / 1000).toFixed(1))} s`;
