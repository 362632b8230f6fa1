/**
 * The guest-side half of the self-test: from inside a context set up as the guest's will be,
 * tries every route to the current time, to a `Date` constructor that is not frozen and to
 * unseeded randomness (`Math.random`, and `crypto` where the context has it), and returns what got through.
 *
 * Self-contained, like `installClock`: its source text is evaluated in the guest, so it uses
 * neither `eval` nor `Function` and imports nothing at run time.
 *
 * @internal
 * @module
 */

/* eslint-disable */

/** What the self-test expects; plain data, written into the script as JSON. */
export interface ClockExpectation {
  readonly at: number;
  readonly seed: number;
  /** The first values `Math.random` must give for `seed`. */
  readonly random: readonly number[];
  /** Where the context has `crypto.getRandomValues`: the first 16 bytes it must give, then the first `randomUUID()`. */
  readonly cryptoBytes: readonly number[];
  readonly cryptoUuid: string;
}

/** The guest's verdict, returned as a JSON string. */
export interface ClockVerdict {
  /** One line per route that got through; empty when the clock holds. */
  failures: string[];
  /** How many routes were tried. */
  routes: number;
  /** How many objects the walk from `globalThis` visited. */
  walked: number;
  temporal: 'absent' | 'frozen';
  performance: 'absent' | 'aligned';
  crypto: 'absent' | 'seeded';
}

export function inspectClock(g: any, expected: ClockExpectation): string {
  'use strict';
  const at = expected.at;
  const failures: string[] = [];
  let routes = 0;
  const show = (value: unknown): string => (typeof value === 'string' ? JSON.stringify(value) : String(value));
  const check = (route: string, attempt: () => string): void => {
    routes++;
    try {
      const problem = attempt();
      if (problem !== '') failures.push(`${route} ${problem}`);
    } catch (error: any) {
      failures.push(`${route} threw ${error !== null && typeof error === 'object' ? `${error.name}: ${error.message}` : show(error)}`);
    }
  };
  const isAt = (time: unknown): string => (time === at ? '' : `gave ${show(time)}, not ${at}`);
  const getTime = g.Date.prototype.getTime;
  const timeOf = (date: unknown): unknown => Reflect.apply(getTime, date, []);

  check('Date.now()', () => isAt(g.Date.now()) || isAt(g.Date.now()));
  check('new Date()', () => isAt(new g.Date().getTime()));
  check('Date()', () => (g.Date() === new g.Date(at).toString() ? '' : `gave ${show(g.Date())}, not ${show(new g.Date(at).toString())}`));
  check('Date(0)', () => (g.Date(0) === new g.Date(at).toString() ? '' : `gave ${show(g.Date(0))}, not ${show(new g.Date(at).toString())}`));
  check('new (Object.getPrototypeOf(new Date(0)).constructor)()', () => isAt(new (Object.getPrototypeOf(new g.Date(0)).constructor)().getTime()));
  check('Reflect.construct(Date, [])', () => isAt(timeOf(Reflect.construct(g.Date, []))));
  check('Reflect.construct(Date, [], Object)', () => isAt(timeOf(Reflect.construct(g.Date, [], Object))));
  check('class extends Date', () => {
    class Later extends g.Date {}
    return isAt(timeOf(new Later())) || isAt((Later as any).now());
  });

  const intl = g.Intl;
  if (intl !== undefined && typeof intl.DateTimeFormat === 'function') {
    const options = {
      timeZone: 'UTC',
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      fractionalSecondDigits: 3,
    };
    check('Intl.DateTimeFormat#format()', () => {
      const format = new intl.DateTimeFormat('en-US', options).format;
      const now = format();
      return now === format(at) ? '' : `gave ${show(now)}, not ${show(format(at))}`;
    });
    check('Intl.DateTimeFormat().format()', () => {
      const now = intl.DateTimeFormat().format();
      return now === intl.DateTimeFormat().format(at) ? '' : `gave ${show(now)}`;
    });
    check('Intl.DateTimeFormat#formatToParts()', () => {
      const formatter = new intl.DateTimeFormat('en-US', options);
      const now = JSON.stringify(formatter.formatToParts());
      return now === JSON.stringify(formatter.formatToParts(at)) ? '' : `gave ${now}`;
    });
  }

  check('Math.random()', () => {
    for (let i = 0; i < expected.random.length; i++) {
      const value = g.Math.random();
      if (value !== expected.random[i]) return `gave ${value} as value ${i + 1}, not ${expected.random[i]} (seed ${expected.seed})`;
    }
    return '';
  });

  // The crypto stream is separate from Math.random's, so the order of these checks does not matter.
  let crypto: ClockVerdict['crypto'] = 'absent';
  const c = g.crypto;
  if (c !== null && typeof c === 'object' && typeof c.getRandomValues === 'function') {
    crypto = 'seeded';
    check('crypto.getRandomValues()', () => {
      const bytes = Array.from(c.getRandomValues(new Uint8Array(expected.cryptoBytes.length)) as Uint8Array);
      return bytes.join() === expected.cryptoBytes.join() ? '' : `gave [${bytes.join()}], not [${expected.cryptoBytes.join()}] (seed ${expected.seed})`;
    });
    if (typeof c.randomUUID === 'function') {
      check('crypto.randomUUID()', () => {
        const uuid = c.randomUUID();
        return uuid === expected.cryptoUuid ? '' : `gave ${show(uuid)}, not ${show(expected.cryptoUuid)} (seed ${expected.seed})`;
      });
    }
  }

  // Every function reachable from globalThis (by own properties, accessors and prototypes) whose
  // `prototype` is Date.prototype is a Date constructor: each must construct `at`. The original
  // constructor, if it were reachable anywhere, would be found here.
  let walked = 0;
  check('every Date constructor reachable from globalThis', () => {
    const DatePrototype = g.Date.prototype;
    const paths = new Map<object, string>([[g, 'globalThis']]);
    const queue: object[] = [g];
    const problems: string[] = [];
    const visit = (value: unknown, path: string): void => {
      if ((typeof value === 'object' && value !== null) || typeof value === 'function') {
        if (!paths.has(value as object)) {
          paths.set(value as object, path);
          queue.push(value as object);
        }
      }
    };
    for (let i = 0; i < queue.length && i < 200_000; i++) {
      const object: any = queue[i];
      const path = paths.get(object)!;
      walked++;
      if (typeof object === 'function') {
        const prototype = Object.getOwnPropertyDescriptor(object, 'prototype');
        if (prototype !== undefined && prototype.value === DatePrototype) {
          const time = timeOf(Reflect.construct(object, []));
          if (time !== at) problems.push(`${path} constructs ${show(time)}`);
          const now = Object.getOwnPropertyDescriptor(object, 'now');
          if (now !== undefined && typeof now.value === 'function' && now.value() !== at) problems.push(`${path}.now() gives ${show(now.value())}`);
        }
      }
      visit(Object.getPrototypeOf(object), `Object.getPrototypeOf(${path})`);
      const keys = Reflect.ownKeys(object);
      for (let k = 0; k < keys.length; k++) {
        const key = keys[k]!;
        const desc = Object.getOwnPropertyDescriptor(object, key);
        if (desc === undefined) continue;
        const name = typeof key === 'string' ? `${path}.${key}` : `${path}[${String(key)}]`;
        visit(desc.value, name);
        visit(desc.get, `${name} (getter)`);
        visit(desc.set, `${name} (setter)`);
      }
    }
    return problems.join(', ');
  });

  let temporal: ClockVerdict['temporal'] = 'absent';
  const Temporal = g.Temporal;
  if (Temporal !== undefined && Temporal !== null && Temporal.Now !== undefined) {
    temporal = 'frozen';
    const zoned = Temporal.Instant.fromEpochMilliseconds(at).toZonedDateTimeISO('UTC');
    const expectedFor: Record<string, () => string> = {
      '[object Temporal.Instant]': () => String(Temporal.Instant.fromEpochMilliseconds(at)),
      '[object Temporal.ZonedDateTime]': () => String(zoned),
      '[object Temporal.PlainDateTime]': () => String(zoned.toPlainDateTime()),
      '[object Temporal.PlainDate]': () => String(zoned.toPlainDate()),
      '[object Temporal.PlainTime]': () => String(zoned.toPlainTime()),
    };
    for (const key of Object.getOwnPropertyNames(Temporal.Now)) {
      const fn = Temporal.Now[key];
      if (typeof fn !== 'function' || key === 'timeZone' || key === 'timeZoneId') continue;
      check(`Temporal.Now.${key}()`, () => {
        let result: unknown;
        try {
          result = key.endsWith('ISO') || key === 'instant' ? fn('UTC') : fn('iso8601', 'UTC');
        } catch {
          return ''; // disabled: nothing gets through
        }
        const tag = Object.prototype.toString.call(result);
        const expectation = expectedFor[tag];
        if (expectation === undefined) return `gave ${tag}, which the self-test cannot judge`;
        return String(result) === expectation() ? '' : `gave ${String(result)}, not ${expectation()}`;
      });
    }
  }

  check('ShadowRealm', () => (Object.getOwnPropertyDescriptor(g, 'ShadowRealm') === undefined ? '' : 'is defined: a new realm would come with a real Date'));

  let performance: ClockVerdict['performance'] = 'absent';
  const perf = g.performance;
  if (perf !== null && typeof perf === 'object' && 'timeOrigin' in perf) {
    performance = 'aligned';
    check('performance.timeOrigin', () => isAt(perf.timeOrigin));
  }

  const verdict: ClockVerdict = { failures, routes, walked, temporal, performance, crypto };
  return JSON.stringify(verdict);
}
