/**
 * `@strata/wire`: length-prefixed CBOR frames between the Strata parent and its worker,
 * with a strict decoder for frames from an untrusted peer; and guest values as lossless JSON
 * (`toTaggedJson`), for results a CLI prints and journals a session keeps.
 *
 * @packageDocumentation
 */

export { ProtocolError, MAX_REASON_CHARS } from './protocol-error.js';
export { DEFAULT_LIMITS, resolveLimits, type Limits } from './limits.js';
export { isWireObject, type WireValue, type WireObject, type WireScalar } from './wire-value.js';
export { scanCbor, CBOR_TAGS } from './cbor-scan.js';
export { checkEncodable, type EncodableInfo } from './encodable-check.js';
export { isAsciiIdentifier } from './identifier.js';
export { encodeValue } from './value-encoder.js';
export { decodeValue } from './value-decoder.js';
export {
  EXCEPTION_CLASSES,
  ERROR_TEXT_LIMITS,
  TRUNCATION_MARKER,
  isExceptionClass,
  capText,
  errorPayload,
  validateErrorPayload,
  type ExceptionClass,
  type ErrorPayload,
} from './error-payload.js';
export {
  PROTOCOL_VERSION,
  MESSAGE_SPECS,
  MESSAGE_TYPES,
  CONSOLE_LEVELS,
  COMMAND_NAMES,
  validateMessage,
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
export { FRAME_HEADER_BYTES, encodeFrame, decodeMessage } from './frame.js';
export { FrameReader, type FrameReaderOptions } from './frame-reader.js';
export { toTaggedJson, fromTaggedJson, type JsonValue } from './tagged-json.js';
