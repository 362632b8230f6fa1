import type { GlobalObject, Internal, UrlClasses } from './internal.js';

/**
 * Installs `URL`, `URLSearchParams` (whatwg-url) and `URLPattern`
 * (urlpattern-polyfill), from the bundle that `scripts/bundle.mjs` builds,
 * lazily: each global starts as an accessor, and the first read of any of
 * them runs the bundle and turns all three into ordinary data properties.
 * Running it costs about 3 ms per context, and most guests never use a URL;
 * parsing it cannot be deferred without `eval`, so that part is paid by all.
 *
 * The bundle runs against bindings captured here, at bootstrap time, so a
 * guest that replaced `TextEncoder` or deleted `SharedArrayBuffer` before its
 * first `new URL()` does not change what the URL classes do.
 *
 * Self-contained: its source text is embedded in `WEB_POLYFILLS`.
 *
 * @internal
 */
export function installUrl(g: GlobalObject, internal: Internal): void {
  const freeze = Object.freeze;

  // What the bundle sees as `globalThis`: only what it reads from it. Without
  // `Buffer` and with non-native encoders, @exodus/bytes takes its pure-JS paths.
  const scope = freeze({
    __proto__: null,
    TextEncoder: g.TextEncoder,
    TextDecoder: g.TextDecoder,
    atob: g.atob,
    btoa: g.btoa,
    escape: g.escape,
    decodeURIComponent: g.decodeURIComponent,
  });
  // webidl-conversions reads SharedArrayBuffer.prototype's getters when it loads;
  // a host may have removed SharedArrayBuffer (the Runtime does, after the bootstrap).
  class NoSharedArrayBuffer {
    get byteLength(): number {
      throw new TypeError('not a SharedArrayBuffer');
    }
    get growable(): boolean {
      throw new TypeError('not a SharedArrayBuffer');
    }
  }
  const shared = typeof g.SharedArrayBuffer === 'function' ? g.SharedArrayBuffer : NoSharedArrayBuffer;
  const encoder = g.TextEncoder;
  const decoder = g.TextDecoder;

  // structuredClone refuses URL objects (platform objects, not serializable), as browsers do.
  // The brand is a getter of the class that throws for anything but a real instance; until the
  // bundle has run there are none.
  let brands: ((value: object) => boolean)[] = [];
  internal.platformBrands.push((value) => brands.some((isBrand) => isBrand(value)));
  const brandBy = (cls: { prototype: object }, getter: string) => internal.brandCheck(Object.getOwnPropertyDescriptor(cls.prototype, getter)?.get);

  internal.urlClasses = internal.defineLazyGroup(internal.urlGlobals, (): UrlClasses => {
    const loaded = internal.runUrlBundle(scope, encoder, decoder, shared);
    brands = [brandBy(loaded.URL, 'href'), brandBy(loaded.URLSearchParams, 'size'), brandBy(loaded.URLPattern, 'protocol')];
    return freeze({ URL: loaded.URL, URLSearchParams: loaded.URLSearchParams, URLPattern: loaded.URLPattern });
  });
}
