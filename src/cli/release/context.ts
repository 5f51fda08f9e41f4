import type { OutputSettings } from './args.js';
import type { ExitCode } from './errors.js';
import type { ApiClient } from './http.js';
import type { FollowSink, Io } from './output.js';

/** What every command gets. */
export interface CommandContext {
  client: ApiClient;
  env: NodeJS.ProcessEnv;
  io: Io;
  output: OutputSettings;
  /** One line on stderr (`cloudly-release: …`), drawn around the live view. */
  log: (line: string) => void;
  /** Where a followed rollout is shown: stdout in table output, stderr with -o json|yaml. */
  sink: FollowSink;
}

/** What a command hands back: its exit code, its document and its text for humans. */
export interface CommandResult {
  exitCode: ExitCode;
  json: Record<string, unknown>;
  text: string;
  /** The text was already shown (by the sink, as the end of a followed rollout): do not print it again. */
  shown?: boolean;
}
