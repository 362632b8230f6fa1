/**
 * Describing what a tool threw, and sizing values for the journal, without ever throwing: a tool
 * is host code the session did not write, and may throw anything (a revoked Proxy, an object
 * whose getters throw).
 *
 * @module
 */
import { types } from 'node:util';
import { toTaggedJson, type JsonValue } from '@strata/wire';
import type { RecordedError } from './journal.js';

const MAX_MESSAGE = 8 * 1024;
const MAX_NAME = 128;

/**
 * `{ name, message }` of a thrown value, for every path that reports a tool's failure (a session's
 * journal, `ToolBridge.bind`'s answer to the guest): never throws, and never runs code of the
 * value's: no Proxy trap, no getter, no `toString` (a slow one would hold the parent's event loop).
 * Only own data properties are read; the name is capped at 128 characters, the message at 8 KiB.
 */
export function describeThrown(thrown: unknown): RecordedError {
  try {
    if (types.isProxy(thrown)) return { name: 'Error', message: 'the tool threw a Proxy' };
    if (thrown !== null && typeof thrown === 'object' && (types.isNativeError(thrown) || inheritsError(thrown))) {
      const name = ownString(thrown, 'name') ?? inheritedName(thrown) ?? 'Error';
      return { name: name.slice(0, MAX_NAME), message: (ownString(thrown, 'message') ?? '').slice(0, MAX_MESSAGE) };
    }
    if (thrown === null || (typeof thrown !== 'object' && typeof thrown !== 'function'))
      return { name: 'Error', message: String(thrown).slice(0, MAX_MESSAGE) };
    return { name: 'Error', message: 'the tool threw a non-Error object' };
  } catch {
    return { name: 'Error', message: 'the tool threw a value that could not be described' };
  }
}

function ownString(object: object, key: string): string | undefined {
  const descriptor = Object.getOwnPropertyDescriptor(object, key);
  return descriptor !== undefined && 'value' in descriptor && typeof descriptor.value === 'string' ? descriptor.value : undefined;
}

/** `instanceof Error` without running a Proxy's getPrototypeOf trap on the way. */
function inheritsError(object: object): boolean {
  for (let proto = Object.getPrototypeOf(object) as object | null; proto !== null; proto = Object.getPrototypeOf(proto) as object | null) {
    if (types.isProxy(proto)) return false;
    if (proto === Error.prototype) return true;
  }
  return false;
}

function inheritedName(error: object): string | undefined {
  for (let proto = Object.getPrototypeOf(error) as object | null; proto !== null; proto = Object.getPrototypeOf(proto) as object | null) {
    if (types.isProxy(proto)) return undefined;
    const name = ownString(proto, 'name');
    if (name !== undefined) return name;
  }
  return undefined;
}

/** A value as tagged JSON and its size in bytes (of its JSON text), or why it cannot be journaled. */
export function recordable(value: unknown): { json: JsonValue; bytes: number } | { problem: string } {
  try {
    const json = toTaggedJson(value);
    return { json, bytes: Buffer.byteLength(JSON.stringify(json)) };
  } catch (error) {
    return { problem: error instanceof Error ? error.message : 'it is not data' };
  }
}
