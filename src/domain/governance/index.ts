/**
 * Governance (docs/lifecycle.md, docs/governance.md): pipelines, approvals, windows, break-glass and
 * stop-the-line as pure rules. Admission runs `freezeDecision`, `pipelineRefusal`, then
 * `approvalsFor` (gate.ts says the order and why).
 */
export * from './approvals.js';
export * from './breakGlass.js';
export * from './gate.js';
export * from './pipelines.js';
export * from './policy.js';
export { compileWindow, isTimeZone, parseDuration, parseRrule, type CompiledWindow, type Occurrence } from './recurrence.js';
export * from './windows.js';
