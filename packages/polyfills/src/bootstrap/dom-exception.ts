import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `DOMException`, which the other polyfills throw with the error
 * names the web platform specifies (InvalidCharacterError, AbortError,
 * TimeoutError, DataCloneError, InvalidStateError...).
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installDomException(g: GlobalObject, internal: Internal): void {
  // The legacy constants, in code order (WebIDL "DOMException names" table).
  const constants = [
    'INDEX_SIZE_ERR',
    'DOMSTRING_SIZE_ERR',
    'HIERARCHY_REQUEST_ERR',
    'WRONG_DOCUMENT_ERR',
    'INVALID_CHARACTER_ERR',
    'NO_DATA_ALLOWED_ERR',
    'NO_MODIFICATION_ALLOWED_ERR',
    'NOT_FOUND_ERR',
    'NOT_SUPPORTED_ERR',
    'INUSE_ATTRIBUTE_ERR',
    'INVALID_STATE_ERR',
    'SYNTAX_ERR',
    'INVALID_MODIFICATION_ERR',
    'NAMESPACE_ERR',
    'INVALID_ACCESS_ERR',
    'VALIDATION_ERR',
    'TYPE_MISMATCH_ERR',
    'SECURITY_ERR',
    'NETWORK_ERR',
    'ABORT_ERR',
    'URL_MISMATCH_ERR',
    'QUOTA_EXCEEDED_ERR',
    'TIMEOUT_ERR',
    'INVALID_NODE_TYPE_ERR',
    'DATA_CLONE_ERR',
  ];
  // Names that have a legacy code; every other name has code 0.
  const codes: Record<string, number> = {
    IndexSizeError: 1,
    HierarchyRequestError: 3,
    WrongDocumentError: 4,
    InvalidCharacterError: 5,
    NoModificationAllowedError: 7,
    NotFoundError: 8,
    NotSupportedError: 9,
    InvalidStateError: 11,
    SyntaxError: 12,
    InvalidModificationError: 13,
    NamespaceError: 14,
    InvalidAccessError: 15,
    TypeMismatchError: 17,
    SecurityError: 18,
    NetworkError: 19,
    AbortError: 20,
    URLMismatchError: 21,
    QuotaExceededError: 22,
    TimeoutError: 23,
    InvalidNodeTypeError: 24,
    DataCloneError: 25,
  };

  // Extending Error gives instances a stack and `instanceof Error`, as in browsers.
  class DOMException extends Error {
    #name: string;

    constructor(message: unknown = '', options: unknown = 'Error') {
      let name: unknown = options;
      let cause: unknown;
      let hasCause = false;
      // Node and Deno also accept `{ name, cause }` as the second argument.
      if (options !== null && typeof options === 'object') {
        const o = options as { name?: unknown; cause?: unknown };
        name = o.name === undefined ? 'Error' : o.name;
        hasCause = 'cause' in o;
        cause = o.cause;
      }
      super(`${message as string}`);
      this.#name = `${name as string}`;
      if (hasCause) {
        Object.defineProperty(this, 'cause', { value: cause, writable: true, configurable: true });
      }
    }

    override get name(): string {
      if (!(#name in this)) throw new TypeError('Illegal invocation');
      return this.#name;
    }

    get code(): number {
      if (!(#name in this)) throw new TypeError('Illegal invocation');
      return codes[this.#name] ?? 0;
    }

    static {
      internal.isDOMException = (value) => value !== null && typeof value === 'object' && #name in value;
    }
  }

  internal.webidl(DOMException, 'DOMException');
  constants.forEach((key, i) => {
    const desc = { value: i + 1, writable: false, enumerable: true, configurable: false };
    Object.defineProperty(DOMException, key, desc);
    Object.defineProperty(DOMException.prototype, key, desc);
  });

  internal.DOMException = DOMException;
  internal.define('DOMException', DOMException);
}
