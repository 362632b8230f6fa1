// Entry of the streams bundle (scripts/bundle.mjs): the WHATWG Streams classes of
// web-streams-polyfill's ponyfill build (which never touches the global object), returned to
// the installer in src/bootstrap/streams.ts, which defines the globals itself.
export {
  ReadableStream,
  ReadableStreamDefaultReader,
  ReadableStreamBYOBReader,
  ReadableStreamBYOBRequest,
  ReadableStreamDefaultController,
  ReadableByteStreamController,
  WritableStream,
  WritableStreamDefaultWriter,
  WritableStreamDefaultController,
  TransformStream,
  TransformStreamDefaultController,
  ByteLengthQueuingStrategy,
  CountQueuingStrategy,
} from 'web-streams-polyfill';
