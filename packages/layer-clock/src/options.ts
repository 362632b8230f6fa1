import { isDate } from 'node:util/types';
import { DEFAULT_CLOCK_AT, DEFAULT_CLOCK_SEED, MAX_CLOCK_SEED } from './constants.js';
import { ClockOptionError } from './errors.js';

/** ECMAScript's largest time value: 100,000,000 days either side of the epoch. */
const MAX_TIME_VALUE = 8.64e15;

/** What the clock is configured with, after validation: plain data, as it crosses to the worker. */
export interface ResolvedClockOptions {
  /** The frozen time, in integer milliseconds since the epoch. */
  readonly at: number;
  /** The seed of `Math.random`, an integer from 0 to 2^32 - 1. */
  readonly seed: number;
}

/**
 * Validates and normalises the clock's options: `at` (a `Date`, epoch milliseconds or an ISO
 * 8601 string with a time zone) and `seed` (an integer from 0 to 2^32 - 1). Missing ones take
 * the defaults. `allowed` lists the keys accepted; any other key is refused (a misspelt
 * option would otherwise be a silent default).
 *
 * @throws {@link ClockOptionError} naming the option and what is accepted.
 * @internal
 */
export function resolveClockOptions(options: unknown, where: string, allowed: readonly string[] = ['at', 'seed']): ResolvedClockOptions {
  if (options === undefined) options = {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ClockOptionError(`${where}: options must be an object such as { at: '2026-01-01T00:00:00Z', seed: 42 }, got ${describe(options)}`);
  }
  const record = options as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!allowed.includes(key)) throw new ClockOptionError(`${where}: unknown option "${key}"; the options are ${allowed.join(', ')}`);
  }
  return {
    at: record['at'] === undefined ? DEFAULT_CLOCK_AT : resolveAt(record['at'], where),
    seed: record['seed'] === undefined ? DEFAULT_CLOCK_SEED : resolveSeed(record['seed'], where),
  };
}

function resolveAt(at: unknown, where: string): number {
  if (isDate(at)) {
    const time = (at as Date).getTime();
    if (Number.isNaN(time)) throw new ClockOptionError(`${where}: option "at" is an invalid Date`);
    return time;
  }
  if (typeof at === 'number') {
    if (!Number.isInteger(at) || Math.abs(at) > MAX_TIME_VALUE) {
      throw new ClockOptionError(
        `${where}: option "at" must be an integer number of milliseconds since the epoch, at most ${MAX_TIME_VALUE} either way; got ${describe(at)}`,
      );
    }
    return at === 0 ? 0 : at; // -0 would serialise as 0 anyway
  }
  if (typeof at === 'string') return parseInstant(at, where);
  throw new ClockOptionError(`${where}: option "at" must be a Date, epoch milliseconds or an ISO 8601 string; got ${describe(at)}`);
}

// The ECMAScript date-time string format: a date, optionally a time with a zone.
const INSTANT = /^([+-]\d{6}|\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(Z|([+-])(\d{2}):(\d{2}))?)?$/;

/**
 * Parses an ISO 8601 instant strictly: `Date.parse` reads a date-time without a zone in the
 * host's local time (a run would then depend on the machine) and rolls over impossible dates
 * (`2026-02-30` is March 2nd); both are refused here.
 */
function parseInstant(text: string, where: string): number {
  const match = INSTANT.exec(text);
  if (match === null) {
    throw new ClockOptionError(
      `${where}: option "at" must be an ISO 8601 date or date-time such as "2026-01-01" or "2026-01-01T12:00:00Z"; got ${JSON.stringify(text)}`,
    );
  }
  const [, yearText, monthText, dayText, hourText, minuteText, secondText, fractionText, zone, sign, zoneHours, zoneMinutes] = match;
  if (hourText !== undefined && zone === undefined) {
    throw new ClockOptionError(
      `${where}: option "at" ${JSON.stringify(text)} has no time zone, so it would be read in the host's local time; add "Z" or an offset such as "+02:00"`,
    );
  }
  if (yearText === '-000000') throw new ClockOptionError(`${where}: option "at": year -000000 is not valid ISO 8601; write 0000`);
  const fields = {
    year: Number(yearText),
    month: Number(monthText),
    day: Number(dayText),
    hour: Number(hourText ?? 0),
    minute: Number(minuteText ?? 0),
    second: Number(secondText ?? 0),
    millisecond: Number((fractionText ?? '').padEnd(3, '0')),
  };
  const date = new Date(0);
  date.setUTCFullYear(fields.year, fields.month - 1, fields.day);
  date.setUTCHours(fields.hour, fields.minute, fields.second, fields.millisecond);
  const roundTrips =
    date.getUTCFullYear() === fields.year &&
    date.getUTCMonth() === fields.month - 1 &&
    date.getUTCDate() === fields.day &&
    date.getUTCHours() === fields.hour &&
    date.getUTCMinutes() === fields.minute &&
    date.getUTCSeconds() === fields.second;
  const offsetMinutes = zone === undefined || zone === 'Z' ? 0 : (sign === '-' ? -1 : 1) * (Number(zoneHours) * 60 + Number(zoneMinutes));
  if (!roundTrips || Number(zoneHours ?? 0) > 23 || Number(zoneMinutes ?? 0) > 59) {
    throw new ClockOptionError(`${where}: option "at" ${JSON.stringify(text)} is not a real date and time`);
  }
  const time = date.getTime() - offsetMinutes * 60_000;
  if (!(Math.abs(time) <= MAX_TIME_VALUE)) throw new ClockOptionError(`${where}: option "at" ${JSON.stringify(text)} is outside the range of Date`);
  return time;
}

function resolveSeed(seed: unknown, where: string): number {
  if (typeof seed !== 'number' || !Number.isInteger(seed)) {
    throw new ClockOptionError(`${where}: option "seed" must be an integer from 0 to ${MAX_CLOCK_SEED}; got ${describe(seed)}`);
  }
  if (seed < 0 || seed > MAX_CLOCK_SEED) {
    throw new ClockOptionError(
      `${where}: option "seed" must be from 0 to ${MAX_CLOCK_SEED} (an unsigned 32-bit integer; \`value >>> 0\` maps any integer there); got ${seed}`,
    );
  }
  return seed;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}
