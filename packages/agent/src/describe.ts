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

/** `{ name, message }` of a thrown value; never throws, never runs a Proxy trap. */
export function describeThrown(thrown: unknown): RecordedError {
  try {
    if (types.isProxy(thrown)) return { name: 'Error', message: 'the tool threw a Proxy' };
    if (types.isNativeError(thrown) || thrown instanceof Error) {
      const name = ownString(thrown, 'name') ?? inheritedName(thrown) ?? 'Error';
      return { name, message: (ownString(thrown, 'message') ?? '').slice(0, MAX_MESSAGE) };
    }
    if (thrown === null || (typeof thrown !== 'object' && typeof thrown !== 'function')) return { name: 'Error', message: String(thrown).slice(0, MAX_MESSAGE) };
    return { name: 'Error', message: 'the tool threw a non-Error object' };
  } catch {
    return { name: 'Error', message: 'the tool threw a value that could not be described' };
  }
}

function ownString(object: object, key: string): string | undefined {
  const descriptor = Object.getOwnPropertyDescriptor(object, key);
  return descriptor !== undefined && 'value' in descriptor && typeof descriptor.value === 'string' ? descriptor.value : undefined;
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
