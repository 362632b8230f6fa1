/**
 * `@strata/wire`: length-prefixed CBOR frames between the Strata parent and its worker,
 * with a strict decoder for frames from an untrusted peer; and guest values as lossless JSON
 * (`toTaggedJson`), for results a CLI prints and journals a session keeps; and the one walk
 * over nested values (`ValueWalk`) that the wire's check and the runtime's checks share.
 *
 * The entry holds what other packages and the README use. The rest (`CBOR_TAGS`, `FRAME_HEADER_BYTES`, …) is internal to the package: its own tests import it
 * from the module that defines it.
 *
 * @packageDocumentation
 */

export { ProtocolError } from './protocol-error.js';
export { DEFAULT_LIMITS, resolveLimits, type Limits } from './limits.js';
export type { WireValue, WireObject, WireScalar } from './wire-value.js';
export { scanCbor } from './cbor-scan.js';
export { checkEncodable, type EncodableInfo } from './encodable-check.js';
export { builtinKind } from './builtin-kind.js';
export { ValueWalk, WalkKind, type WalkVisitor, type ContainerKind } from './value-walk.js';
export { isAsciiIdentifier } from './identifier.js';
export { encodeValue } from './value-encoder.js';
export { decodeValue } from './value-decoder.js';
export {
  EXCEPTION_CLASSES,
  ERROR_TEXT_LIMITS,
  isExceptionClass,
  capText,
  errorPayload,
  type ExceptionClass,
  type ErrorPayload,
} from './error-payload.js';
export {
  PROTOCOL_VERSION,
  MESSAGE_SPECS,
  validateMessage,
  MESSAGE_TYPES,
  CONSOLE_LEVELS,
  COMMAND_NAMES,
  type Message,
  type MessageOf,
  type RequiredFields,
  type OptionalFields,
  type MessageType,
  type ConsoleLevel,
  type CommandName,
  type Outcome,
  type FieldTypes,
  type FieldSpec,
} from './messages.js';
export { encodeFrame, decodeMessage } from './frame.js';
export { FrameReader, type FrameReaderOptions } from './frame-reader.js';
export { toTaggedJson, fromTaggedJson, type JsonValue } from './tagged-json.js';
