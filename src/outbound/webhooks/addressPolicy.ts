import { lookup } from 'node:dns/promises';
import { lookup as lookupCallback } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { isPublicAddress } from '../registry/addresses.js';

/**
 * Where webhooks may be sent (SSRF): public addresses only, unless the allow-list
 * (WEBHOOK_ALLOWED_HOSTS: host names, IP addresses and CIDR ranges, comma-separated) names the host or
 * every address it resolves to. Checked twice: when a subscription is written (a clear refusal), and at
 * every connect (the socket's own lookup), so a name that resolves elsewhere later (DNS rebinding) is
 * refused too.
 */
export class AddressPolicy {
  private readonly hosts = new Set<string>();
  private readonly ranges = new BlockList();
  private hasRanges = false;

  constructor (allowList: string | undefined) {
    for (const raw of (allowList ?? '').split(',').map((e) => e.trim().toLowerCase()).filter((e) => e !== '')) {
      const [network, prefix] = raw.split('/');
      const family = isIP(network ?? '');
      if (family !== 0 && prefix !== undefined) {
        this.ranges.addSubnet(network as string, Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
        this.hasRanges = true;
      } else if (family !== 0) {
        this.ranges.addAddress(raw, family === 4 ? 'ipv4' : 'ipv6');
        this.hasRanges = true;
      } else {
        this.hosts.add(raw);
      }
    }
  }

  hostListed (host: string): boolean {
    return this.hosts.has(host.replace(/^\[|\]$/g, '').toLowerCase());
  }

  addressAllowed (address: string): boolean {
    if (isPublicAddress(address)) return true;
    if (!this.hasRanges) return false;
    const family = isIP(address);
    return family !== 0 && this.ranges.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }

  /** Why a host may not be reached (undefined: it may), resolving its name. */
  async refusal (host: string): Promise<string | undefined> {
    const bare = host.replace(/^\[|\]$/g, '');
    if (this.hostListed(bare)) return undefined;
    let addresses: string[];
    try {
      addresses = isIP(bare) !== 0 ? [bare] : (await lookup(bare, { all: true })).map((a) => a.address);
    } catch (err) {
      return `${bare} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'})`;
    }
    const refused = addresses.find((a) => !this.addressAllowed(a));
    return refused === undefined ? undefined : notAllowedMessage(bare, refused);
  }

  /** A socket lookup that fails unless every address of the name is allowed. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    lookupCallback(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) {
        callback(err, '', 0);
        return;
      }
      const refused = this.hostListed(hostname) ? undefined : addresses.find((entry) => !this.addressAllowed(entry.address));
      if (refused !== undefined) {
        callback(new AddressRefused(notAllowedMessage(hostname, refused.address)), '', 0);
        return;
      }
      if (options.all === true) (callback as unknown as (e: null, a: typeof addresses) => void)(null, addresses);
      else callback(null, addresses[0]?.address ?? '', addresses[0]?.family ?? 4);
    });
  };
}

export class AddressRefused extends Error {
  constructor (message: string) {
    super(message);
    this.name = 'AddressRefused';
  }
}

const notAllowedMessage = (host: string, address: string): string =>
  `${host} resolves to ${address}, a loopback, link-local or private address: webhooks are not sent there unless WEBHOOK_ALLOWED_HOSTS names it`;
