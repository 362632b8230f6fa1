import type { GlobalObject, Internal } from './internal.js';

/**
 * Installs `TextEncoderStream` and `TextDecoderStream` (Encoding standard),
 * each a `TransformStream` from `internal.streamClasses()` behind the
 * `readable` / `writable` pair: the classes are defined at once, and only
 * constructing one loads the streams bundle.
 *
 * The encoder keeps a lead surrogate that ends a chunk for the next one (a
 * lone one becomes U+FFFD, and one left at the end is flushed as U+FFFD); the
 * decoder is a `TextDecoder` of bootstrap time decoding with `{ stream: true }`,
 * so a character split across chunks comes out whole, and flushing at the end
 * (a truncated sequence is U+FFFD, or a TypeError when `fatal`).
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installEncodingStreams(g: GlobalObject, internal: Internal): void {
  const apply = Reflect.apply;
  const { getOwnPropertyDescriptor } = Object;
  const isView = ArrayBuffer.isView;
  const Decoder = g.TextDecoder as new (label: unknown, options: unknown) => object;
  const decode = Decoder.prototype.decode as (input?: unknown, options?: unknown) => string;
  const getter = (key: string) => getOwnPropertyDescriptor(Decoder.prototype, key)!.get!;
  const decoderEncoding = getter('encoding');
  const decoderFatal = getter('fatal');
  const decoderIgnoreBOM = getter('ignoreBOM');
  const encode = internal.utf8Encode;
  const fromCharCode = String.fromCharCode;
  const STREAM = Object.freeze({ __proto__: null, stream: true });

  interface Controller {
    enqueue(chunk: unknown): void;
  }
  interface Pair {
    readable: object;
    writable: object;
  }

  class TextEncoderStream {
    #transform: Pair;

    constructor() {
      // A lead surrogate that ended the last chunk, waiting for its trail.
      let lead = '';
      const { TransformStream } = internal.streamClasses();
      this.#transform = new TransformStream({
        transform(chunk: unknown, controller: Controller) {
          let text = lead + `${chunk as string}`;
          lead = '';
          const last = text.length === 0 ? 0 : text.charCodeAt(text.length - 1);
          if (last >= 0xd800 && last <= 0xdbff) {
            lead = fromCharCode(last);
            text = text.slice(0, -1);
          }
          // utf8Encode turns a lone surrogate into U+FFFD, as the standard's encoder does.
          if (text.length > 0) controller.enqueue(encode(text));
        },
        flush(controller: Controller) {
          if (lead !== '') controller.enqueue(encode('\ufffd'));
        },
      });
    }

    static {
      // structuredClone refuses them, as platform objects that are not serializable.
      internal.platformBrands.push((v) => #transform in v);
    }

    static #check(stream: unknown): TextEncoderStream {
      if (stream === null || typeof stream !== 'object' || !(#transform in stream)) throw new TypeError('Illegal invocation');
      return stream as TextEncoderStream;
    }

    get encoding(): string {
      TextEncoderStream.#check(this);
      return 'utf-8';
    }
    get readable(): object {
      return TextEncoderStream.#check(this).#transform.readable;
    }
    get writable(): object {
      return TextEncoderStream.#check(this).#transform.writable;
    }
  }

  class TextDecoderStream {
    #transform: Pair;
    #decoder: object;

    constructor(label: unknown = 'utf-8', options: unknown = undefined) {
      // The TextDecoder checks the label (RangeError) and the options (TypeError).
      const decoder = new Decoder(label, options);
      this.#decoder = decoder;
      const { TransformStream } = internal.streamClasses();
      this.#transform = new TransformStream({
        transform(chunk: unknown, controller: Controller) {
          if (!isView(chunk) && !internal.isArrayBuffer(chunk) && !internal.isSharedArrayBuffer(chunk)) {
            throw new TypeError("Failed to execute 'transform' on 'TextDecoderStream': chunk is not an ArrayBuffer or ArrayBufferView.");
          }
          const text = apply(decode, decoder, [chunk, STREAM]);
          if (text !== '') controller.enqueue(text);
        },
        flush(controller: Controller) {
          const text = apply(decode, decoder, []);
          if (text !== '') controller.enqueue(text);
        },
      });
    }

    static {
      internal.platformBrands.push((v) => #transform in v);
    }

    static #check(stream: unknown): TextDecoderStream {
      if (stream === null || typeof stream !== 'object' || !(#transform in stream)) throw new TypeError('Illegal invocation');
      return stream as TextDecoderStream;
    }

    get encoding(): string {
      return apply(decoderEncoding, TextDecoderStream.#check(this).#decoder, []) as string;
    }
    get fatal(): boolean {
      return apply(decoderFatal, TextDecoderStream.#check(this).#decoder, []) as boolean;
    }
    get ignoreBOM(): boolean {
      return apply(decoderIgnoreBOM, TextDecoderStream.#check(this).#decoder, []) as boolean;
    }
    get readable(): object {
      return TextDecoderStream.#check(this).#transform.readable;
    }
    get writable(): object {
      return TextDecoderStream.#check(this).#transform.writable;
    }
  }

  internal.webidl(TextEncoderStream, 'TextEncoderStream');
  internal.webidl(TextDecoderStream, 'TextDecoderStream');
  internal.define('TextEncoderStream', TextEncoderStream);
  internal.define('TextDecoderStream', TextDecoderStream);
}
