/**
 * The string formats a tool's schema may name (`date-time`, `email`, `uri`, …), checked against
 * guest data in the parent, each in time linear in the string or under a length cap checked
 * first. ajv-formats' definitions, but its regular expressions run on the linear engine
 * (`linear-regexp.ts`); the few that are functions or use lookaround are re-expressed or capped.
 *
 * @module
 */
import type { Format } from 'ajv';
import formatsModule from 'ajv-formats/dist/formats.js';
import { linearRegExp, type LinearRegExp } from './linear-regexp.js';

/**
 * Length caps, in UTF-16 units, of the formats whose check is a function or a native regular
 * expression: a longer string does not match the format. Each is far above what a valid value
 * needs (a date-time is under 40 characters, a URL rarely over 2 000).
 */
export const FORMAT_LENGTH_CAPS: Readonly<Record<string, number>> = Object.freeze({
  date: 256,
  time: 256,
  'date-time': 256,
  'iso-time': 256,
  'iso-date-time': 256,
  // ajv-formats' url expression backtracks cubically (50 000 characters: 10 s); 2 083 is the classic URL limit.
  url: 2083,
  // A function around an expression that measures linear; the cap bounds it all the same.
  uri: 65_536,
  // Compiling a guest string as a RegExp costs more than linear time in V8 for some strings.
  regex: 8192,
});

type FormatDefinition = { validate: RegExp | ((value: string) => boolean); compare?: unknown; type?: string };

// ajv-formats is CommonJS: its exports are the default export, or that export's own default.
const ajvFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as {
  fullFormats: Record<string, RegExp | FormatDefinition | ((value: string) => boolean) | true>;
};

let built: Record<string, Format> | undefined;

/** Every format ajv-formats' full set has, each linear or capped; built once. */
export function linearFormats(): Readonly<Record<string, Format>> {
  return (built ??= build());
}

function build(): Record<string, Format> {
  const formats: Record<string, Format> = {};
  for (const [name, definition] of Object.entries(ajvFormats.fullFormats)) {
    if (definition === true) formats[name] = true;
    else if (definition instanceof RegExp) formats[name] = OWN[name] ?? viaLinear(definition);
    else if (typeof definition === 'function') formats[name] = OWN[name] ?? capped(name, definition);
    else if (definition.type === 'number')
      formats[name] = definition as Format; // numbers: no regular expression
    else {
      const validate = OWN[name] ?? (definition.validate instanceof RegExp ? viaLinear(definition.validate) : capped(name, definition.validate));
      formats[name] = { ...(definition as object), validate } as Format;
    }
  }
  return formats;
}

function viaLinear(expression: RegExp): (value: string) => boolean {
  const linear: LinearRegExp = linearRegExp(expression.source, expression.flags);
  return (value) => linear.test(value);
}

function capped(name: string, check: (value: string) => boolean): (value: string) => boolean {
  const cap = FORMAT_LENGTH_CAPS[name];
  if (cap === undefined) throw new Error(`the format ${name} is a function with no length cap: give it one in FORMAT_LENGTH_CAPS`);
  return (value) => value.length <= cap && check(value);
}

// What ajv-formats writes with lookaround or a backtracking expression, written for the linear engine.
const DURATION = linearRegExp('^P(?:(?:\\d+Y)?(?:\\d+M)?(?:\\d+D)?(?:T(?:\\d+H)?(?:\\d+M)?(?:\\d+S)?)?|\\d+W)$');
const HOSTNAME = linearRegExp('^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\\.?$', 'i');
const BASE64 = linearRegExp('^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$');
const urlCap = FORMAT_LENGTH_CAPS['url']!;
const nativeUrl = ajvFormats.fullFormats['url'];

const OWN: Record<string, (value: string) => boolean> = {
  // RFC 3339 appendix A: at least one part after P, and at least one after a T.
  duration: (value) => value !== 'P' && !value.endsWith('T') && DURATION.test(value),
  // RFC 1123: at most 253 characters (a trailing dot aside), labels of at most 63.
  hostname: (value) => (value.length <= 253 || (value.length === 254 && value.endsWith('.'))) && HOSTNAME.test(value),
  // RFC 4648 base64 over the whole string.
  byte: (value) => BASE64.test(value),
  url: (value) => value.length <= urlCap && nativeUrl instanceof RegExp && nativeUrl.test(value),
};
