/**
 * What `openApiTools` and its parser's worker thread share: the code of the worker's own refusals,
 * and JSON pointers (`#/paths/~1pets/get`) written as the paths its messages name (`paths./pets.get`).
 *
 * @module
 */

/** The `code` of an error the parser's worker wrote for the caller (its message is shown as it is). */
export const PARSE_REFUSED = 'STRATA_OPENAPI_REFUSED';

/** A JSON pointer (without its `#`) as a dotted path. */
export function pointerPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

/** What the parser said, its pointers written as paths: the first five problems of its validation, or its message. */
export function parserProblem(error: unknown): string {
  const details = (error as { details?: unknown }).details;
  if (Array.isArray(details) && details.length > 0) {
    return details
      .slice(0, 5)
      .map((detail: { instancePath?: unknown; message?: unknown; params?: { missingProperty?: unknown } }) => {
        const at = pointerPath(String(detail.instancePath ?? ''));
        const missing = detail.params?.missingProperty;
        if (typeof missing === 'string') return `${at === '' ? missing : `${at}.${missing}`} is required`;
        return `${at === '' ? '(the document)' : at} ${String(detail.message ?? 'is invalid')}`;
      })
      .join('; ');
  }
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/#(\/[^\s'"]*)/g, (_, pointer: string) => pointerPath(pointer)).slice(0, 2_000);
}
