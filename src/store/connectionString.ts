import { MongoClient, type MongoClientOptions } from 'mongodb';

/** A connection string the driver cannot use: why, without the string itself (it may hold a password). */
export class InvalidConnectionString extends Error {
  constructor (reason: string) {
    super(reason);
    this.name = 'InvalidConnectionString';
  }
}

/** The client for a connection string, or InvalidConnectionString (the driver parses it here, without connecting). */
export function clientFor (uri: string, options: MongoClientOptions): MongoClient {
  try {
    return new MongoClient(uri, options);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    // Never the string itself, nor anything of its user info, whatever the driver's message quotes of it.
    const redacted = reason.split(uri).join('<the connection string>').replace(/\/\/[^@\s/]*@/g, '//<credentials>@').slice(0, 200);
    throw new InvalidConnectionString(`not a connection string the MongoDB driver can use (${redacted})`);
  }
}
