/**
 * Exit codes of `cloudly-release`. They are part of the CLI's contract with CI scripts:
 * never renumber them.
 */
export const ExitCode = {
  /** The command did what was asked (a wait ended in `succeeded` / `rolled-back`). */
  ok: 0,
  /** The rollout failed or mismatched (or was superseded), or the server refused the request (4xx). */
  refused: 1,
  /** `--timeout` ran out before the rollout reached a terminal state. */
  timeout: 2,
  /** Bad command line or configuration (missing CLOUDLY_URL, unknown flag, bad value). */
  usage: 3,
  /** The control plane could not be reached, or kept failing (network errors, 5xx), after every retry. */
  unreachable: 4,
} as const;

export type ExitCode = typeof ExitCode[keyof typeof ExitCode];

/**
 * Everything that ends a command early. `code` is machine-readable (the server's problem
 * `code` when it refused the request, else one of the CLI's own: `usage`, `config`,
 * `unreachable`, `timeout`, `no-current-rollout`, …); `details` go into the `--json` output.
 */
export class CliError extends Error {
  constructor (
    readonly exitCode: ExitCode,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {}
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string): CliError => new CliError(ExitCode.usage, 'usage', message);
export const configError = (message: string): CliError => new CliError(ExitCode.usage, 'config', message);

/** The server answered with a problem document (4xx): refused, not retried. */
export class ApiError extends CliError {
  constructor (readonly status: number, code: string, message: string, readonly problem: Record<string, unknown>) {
    super(ExitCode.refused, code, message, { status, ...problem });
    this.name = 'ApiError';
  }
}
