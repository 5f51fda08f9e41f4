/** Exit codes of `npm run demo` (docs/demo.md). */
export const ExitCode = {
  /** The rollout ended as the switches predict (or the demo was stopped with Ctrl-C). */
  ok: 0,
  /** The rollout ended otherwise: another status, superseded, or still running at --timeout. */
  unexpected: 1,
  /** Bad option, or no key to mint tokens with, or the server refused the demo's tokens. */
  usage: 3,
  /** The control plane could not be reached. */
  unreachable: 4,
} as const;
export type ExitCode = typeof ExitCode[keyof typeof ExitCode];

/** Ends the demo with one line on stderr and the exit code. */
export class DemoError extends Error {
  constructor (readonly exitCode: ExitCode, message: string) {
    super(message);
    this.name = 'DemoError';
  }
}

export const usageError = (message: string): DemoError => new DemoError(ExitCode.usage, message);
