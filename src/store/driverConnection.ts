import { createRequire } from 'node:module';
import { MongoNetworkError } from 'mongodb';

/**
 * A driver defect mended in place (mongodb 6.22; 7.9 has it too). `Connection.writeCommand` writes
 * a command to the socket and, when the socket's buffer is full (a large write, a database that
 * stopped reading), waits for the socket's 'drain' — or its 'error'. When the connection is
 * closed meanwhile without a socket error (the driver's own socket timeout, a pool clear, a close
 * the database ended cleanly), the driver destroys the socket, which then emits neither: the
 * command never settles, the request behind it hangs for good and its connection stays checked
 * out. The same wait on a monitoring connection is the hung heartbeat the watchdog in ./mongo.ts
 * reconnects after.
 *
 * Mended: a command being written ends with its connection — rejected with the connection's own
 * error (a MongoNetworkError: retryable, `database-unavailable`), as a command being read already
 * does. Installed once per process, by the first `Database`.
 *
 * Driver internals, on purpose: `mongodb/lib/cmap/connection.js` (the package has no exports map).
 * A driver whose Connection no longer has this shape is left as it is; the integration test
 * test/integration/faults/stalledConnection.test.ts then fails and says so.
 */

interface DriverConnection {
  closed: boolean;
  error?: Error | null;
  id: number | '<monitor>';
  address: string;
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

type WriteCommand = (this: DriverConnection, command: unknown, options: unknown) => Promise<void>;

/** Marks the driver's prototype as mended: once per process even when this module is loaded twice (src and dist). */
const MENDED = Symbol.for('cloudly.endWritesWithTheirConnection');

type ConnectionPrototype = { writeCommand?: WriteCommand, [MENDED]?: true };

export function endWritesWithTheirConnection (): void {
  const require = createRequire(import.meta.url);
  const { Connection } = require('mongodb/lib/cmap/connection.js') as { Connection?: { prototype: ConnectionPrototype } };
  const prototype = Connection?.prototype;
  const writeCommand = prototype?.writeCommand;
  if (prototype === undefined || typeof writeCommand !== 'function' || prototype[MENDED]) return;
  prototype[MENDED] = true;

  const closedError = (connection: DriverConnection): Error =>
    connection.error ?? new MongoNetworkError(`connection ${connection.id} to ${connection.address} closed`);

  prototype.writeCommand = function (this: DriverConnection, command: unknown, options: unknown): Promise<void> {
    if (this.closed) return Promise.reject(closedError(this));
    const written = writeCommand.call(this, command, options);
    return new Promise<void>((resolve, reject) => {
      const onClose = (): void => { reject(closedError(this)); };
      this.once('close', onClose);
      written.then(
        () => { this.off('close', onClose); resolve(); },
        (err: unknown) => { this.off('close', onClose); reject(err); }
      );
    });
  };
}
