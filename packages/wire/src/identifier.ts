/**
 * The one spelling of "a name the guest can write as a bare identifier": a global a host binds,
 * a tool's name, a property key a path or a declaration shows as `.key` instead of `["key"]`.
 *
 * @module
 */

// ASCII only: a name that crosses into prompts, paths and error messages reads the same
// everywhere, and no Unicode escape or look-alike letter hides in it.
const ASCII_IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * Whether `name` is an ASCII JavaScript identifier: a letter, `_` or `$`, then letters, digits,
 * `_` or `$`. Reserved words pass (`class`): callers that bind a global refuse those themselves.
 *
 * ```ts
 * isAsciiIdentifier('lookup'); // true
 * isAsciiIdentifier('2fa');    // false
 * isAsciiIdentifier('café');   // false: a JavaScript identifier, but not ASCII
 * ```
 */
export function isAsciiIdentifier(name: string): boolean {
  return ASCII_IDENTIFIER.test(name);
}
