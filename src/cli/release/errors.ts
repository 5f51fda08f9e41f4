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
  /** Bad command line or configuration (missing CLOUDLY_URL, unknown flag, bad value, malformed token). */
  usage: 3,
  /** The control plane could not be reached, or kept failing (network errors, 5xx), after every retry. */
  unreachable: 4,
  /**
   * Nothing was issued yet: the server answered 202 `approval-required` and made a promotion request
   * that other principals must approve (docs/governance.md "Approvals"). Not 0: a CI step that goes on
   * after `promote` must not take a pending request for a rollout.
   */
  approvalRequired: 5,
} as const;

export type ExitCode = typeof ExitCode[keyof typeof ExitCode];

export interface CliErrorInit {
  exitCode: ExitCode;
  /** Machine-readable: the server's problem `code`, or one of the CLI's own. */
  code: string;
  message: string;
  /** Goes into the `-o json|yaml` error document. */
  details?: Record<string, unknown>;
}

/**
 * Everything that ends a command early. `code` is machine-readable (the server's problem
 * `code` when it refused the request, else one of the CLI's own: `usage`, `config`,
 * `unreachable`, `timeout`, `no-current-rollout`, …); `details` go into the JSON output.
 */
export class CliError extends Error {
  readonly exitCode: ExitCode;
  readonly code: string;
  readonly details: Record<string, unknown>;

  constructor ({ exitCode, code, message, details = {} }: CliErrorInit) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
    this.code = code;
    this.details = details;
  }
}

export const usageError = (message: string): CliError => new CliError({ exitCode: ExitCode.usage, code: 'usage', message });
export const configError = (message: string): CliError => new CliError({ exitCode: ExitCode.usage, code: 'config', message });

export interface ApiErrorInit {
  status: number;
  code: string;
  message: string;
  /** The server's problem document. */
  problem: Record<string, unknown>;
}

/** The server answered with a problem document (4xx): refused, not retried. */
export class ApiError extends CliError {
  readonly status: number;
  readonly problem: Record<string, unknown>;

  constructor ({ status, code, message, problem }: ApiErrorInit) {
    super({ exitCode: ExitCode.refused, code, message, details: { status, ...problem } });
    this.name = 'ApiError';
    this.status = status;
    this.problem = problem;
  }
}
