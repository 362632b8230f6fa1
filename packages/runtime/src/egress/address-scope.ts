/**
 * Which network an IP address belongs to, for the egress policy's DNS rule. Pure: a table of
 * ranges, no lookups.
 *
 * @module
 */
import { createRequire } from 'node:module';

let net: typeof import('node:net') | undefined;

/**
 * node:net's `isIP` (0, 4 or 6), loaded on first use: the worker bundles the egress policy's code
 * but never checks an address, and node:net costs a `--jitless` worker about 15 ms to load.
 */
export function isIP(address: string): number {
  net ??= createRequire(import.meta.url)('node:net') as typeof import('node:net');
  return net.isIP(address);
}

/**
 * `'public'`: the internet. `'private'`: this machine or a local network (loopback, RFC 1918,
 * link-local, unique-local IPv6, CGNAT, benchmarking): reachable only when the policy names the
 * host. `'never'`: addresses no request should go to (unspecified `0.0.0.0/8` and `::`, which
 * reach this machine, multicast, broadcast and reserved ranges), whatever the policy says.
 */
export type AddressScope = 'public' | 'private' | 'never';

/** [first address as a 32-bit number, prefix length, scope, name]. */
const IPV4_RANGES: readonly (readonly [number, number, AddressScope, string])[] = [
  [v4('0.0.0.0'), 8, 'never', 'this network (0.0.0.0/8)'],
  [v4('10.0.0.0'), 8, 'private', 'private (10.0.0.0/8)'],
  [v4('100.64.0.0'), 10, 'private', 'shared CGNAT (100.64.0.0/10)'],
  [v4('127.0.0.0'), 8, 'private', 'loopback (127.0.0.0/8)'],
  [v4('169.254.0.0'), 16, 'private', 'link-local (169.254.0.0/16)'],
  [v4('172.16.0.0'), 12, 'private', 'private (172.16.0.0/12)'],
  [v4('192.0.0.0'), 24, 'private', 'IETF protocol assignments (192.0.0.0/24)'],
  [v4('192.168.0.0'), 16, 'private', 'private (192.168.0.0/16)'],
  [v4('198.18.0.0'), 15, 'private', 'benchmarking (198.18.0.0/15)'],
  [v4('224.0.0.0'), 4, 'never', 'multicast (224.0.0.0/4)'],
  [v4('240.0.0.0'), 4, 'never', 'reserved or broadcast (240.0.0.0/4)'],
];

/** The scope of an IP address and the name of its range; `undefined` for a string that is not an IP address. */
export function addressScope(address: string): { scope: AddressScope; range: string } | undefined {
  const version = isIP(address);
  if (version === 4) return ipv4Scope(v4(address));
  if (version === 6) return ipv6Scope(v6(address));
  return undefined;
}

function ipv4Scope(n: number): { scope: AddressScope; range: string } {
  for (const [first, prefix, scope, range] of IPV4_RANGES) {
    const mask = prefix === 0 ? 0 : (0xffff_ffff << (32 - prefix)) >>> 0;
    if ((n & mask) >>> 0 === first) return { scope, range };
  }
  return { scope: 'public', range: 'public' };
}

function ipv6Scope(groups: readonly number[]): { scope: AddressScope; range: string } {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups;
  const embedded = ((g6 << 16) | g7) >>> 0;
  const upperZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (upperZero && g5 === 0 && g6 === 0 && g7 === 0) return { scope: 'never', range: 'unspecified (::)' };
  if (upperZero && g5 === 0 && g6 === 0 && g7 === 1) return { scope: 'private', range: 'loopback (::1)' };
  // An IPv4 address inside an IPv6 one reaches that IPv4 address: judge it as one.
  if (upperZero && (g5 === 0xffff || g5 === 0)) return embeddedScope(embedded, g5 === 0xffff ? 'IPv4-mapped' : 'IPv4-compatible');
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return embeddedScope(embedded, 'NAT64');
  if ((g0 & 0xfe00) === 0xfc00) return { scope: 'private', range: 'unique-local (fc00::/7)' };
  if ((g0 & 0xffc0) === 0xfe80) return { scope: 'private', range: 'link-local (fe80::/10)' };
  if ((g0 & 0xffc0) === 0xfec0) return { scope: 'private', range: 'site-local (fec0::/10)' };
  if ((g0 & 0xff00) === 0xff00) return { scope: 'never', range: 'multicast (ff00::/8)' };
  return { scope: 'public', range: 'public' };
}

function embeddedScope(n: number, kind: string): { scope: AddressScope; range: string } {
  const inner = ipv4Scope(n);
  return inner.scope === 'public' ? inner : { scope: inner.scope, range: `${kind} ${inner.range}` };
}

function v4(address: string): number {
  return address.split('.').reduce((n, part) => ((n << 8) | Number(part)) >>> 0, 0);
}

/** The eight 16-bit groups of an IPv6 address (`isIP` already said it is one). */
function v6(address: string): number[] {
  let text = address.replace(/%.*$/, '');
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail !== null) {
    const n = v4(tail[1]!);
    text = `${text.slice(0, tail.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const zeros = rest === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16));
}
