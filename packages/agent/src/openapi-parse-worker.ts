/**
 * The OpenAPI parser's worker thread (see `validated` in openapi-tools.ts): the document validated
 * against its OpenAPI version and its internal `$ref`s resolved by `@apidevtools/swagger-parser`,
 * away from the host's event loop. The parent terminates this thread past its time budget and
 * replaces it after any failure. The parent has already refused external references, circular
 * ones it could see, and documents whose references expand too far.
 *
 * @module
 */
import { serveBoundedRequests } from '@strata/runtime/bounded-worker';
import { PARSE_REFUSED, parserProblem, pointerPath } from './openapi-parse.js';

type Parser = typeof import('@apidevtools/swagger-parser');

const refused = (message: string) => Object.assign(new Error(message), { code: PARSE_REFUSED });

let SwaggerParser: Parser | Error;
try {
  SwaggerParser = (await import('@apidevtools/swagger-parser')).default;
} catch (error) {
  SwaggerParser =
    (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND'
      ? refused('openApiTools needs @apidevtools/swagger-parser: npm install @apidevtools/swagger-parser (an optional peer dependency of @strata/agent)')
      : (error as Error);
}

async function validate(document: Record<string, unknown>): Promise<unknown> {
  if (SwaggerParser instanceof Error) throw SwaggerParser;
  let circular: string | undefined;
  try {
    return await new SwaggerParser().validate(
      document as never,
      {
        // Nothing outside the document is ever read: no resolver, and external references off.
        resolve: { external: false, file: false, http: false },
        dereference: {
          circular: false,
          onCircular: (path: string) => {
            circular ??= path;
          },
        },
      } as never,
    );
  } catch (error) {
    if (circular !== undefined || (error instanceof ReferenceError && /circular/i.test(error.message))) {
      const at = circular === undefined ? '' : `${pointerPath(circular.slice(circular.indexOf('#') + 1))}: `;
      throw refused(
        `${at}the document has a circular $ref; openApiTools refuses recursive schemas (describe the recursive field as an object without the reference)`,
      );
    }
    throw refused(`the OpenAPI document is not valid: ${parserProblem(error)}`);
  }
}

// A refusal leaves the parser as it was: the thread goes on. Anything else replaces it.
serveBoundedRequests(validate, { recoverable: (error) => (error as { code?: unknown } | null)?.code === PARSE_REFUSED });
