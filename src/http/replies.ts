import type { FastifyReply } from 'fastify';
import { errors, type AppError, type Problem } from '../errors.js';
import type { Result } from '../domain/result.js';

/**
 * Use cases name offending fields relative to their own input (`/cursor`, `/registryHost`);
 * the adapter knows where that input sits in the request (`/querystring`, `/body`,
 * `/request/event`) and says so.
 */
export function relocate (error: AppError, inputAt: string): AppError {
  if (error.code !== 'validation-failed' || inputAt === '') return error;
  const problems = (error.details['problems'] ?? []) as Problem[];
  return errors.validationFailed(problems.map((p) => ({ field: `${inputAt}${p.field}`, message: p.message })));
}

/**
 * A use case's result as a REST answer: the value, or the refusal thrown to the one error
 * handler; a replayed outcome carries `Idempotent-Replayed: true` either way.
 */
export function valueOf<T> (result: Result<T>, reply: FastifyReply, inputAt: string): T {
  if (result.replayed) reply.header('idempotent-replayed', 'true');
  if (!result.ok) throw relocate(result.error, inputAt);
  return result.value;
}
