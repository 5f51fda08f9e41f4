/**
 * Crash injection for the crash-safety tests: at a named step boundary the
 * process kills itself with SIGKILL (no cleanup, no flushing — a real crash).
 * Off unless FAULT_INJECTION names the point; production never sets it.
 */
export type FaultPoint =
  | 'after-idempotency-record' | 'after-rollout-record' | 'after-plan-write' | 'after-release-update'
  | 'after-report-claims' | 'after-report-record' | 'after-report-bucket' | 'after-report-status'
  | 'after-deadline-decision' | 'after-success-decision' | 'after-attestation-insert';

export type FaultHook = (point: FaultPoint) => void;

const noFaults: FaultHook = () => {};

export function faultHookFromConfig (enabled: readonly string[]): FaultHook {
  const points = new Set(enabled);
  if (points.size === 0) return noFaults;
  return (point) => {
    if (points.has(point)) {
      process.stderr.write(`FAULT_INJECTION: crashing at ${point}\n`);
      process.kill(process.pid, 'SIGKILL');
    }
  };
}
