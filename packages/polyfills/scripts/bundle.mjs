// Generates src/generated/: bundles the third-party code of the bootstrap into src/generated/url-bundle.ts
// (whatwg-url, urlpattern-polyfill and their dependencies), src/generated/crypto-bundle.ts (@noble/hashes),
// src/generated/streams-bundle.ts (web-streams-polyfill) and src/generated/compression-bundle.ts (fflate),
// before tsc. Run by `npm run build`.
//
// The output is deterministic (no paths, dates or hashes): every build gives the same bootstrap
// bytes. It is generated, not committed (.gitignore).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const root = new URL('../', import.meta.url);

// The packages whose files went into the bundle, from esbuild's metafile: name, version and
// licence of each, for the generated module and the README ("Third-party code in the bootstrap").
function bundledPackages(metafile) {
  const found = new Map();
  for (const input of Object.keys(metafile.inputs)) {
    const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (!match) continue;
    const dir = input.slice(0, match.index + match[0].length);
    const manifest = JSON.parse(readFileSync(new URL(dir + 'package.json', root), 'utf8'));
    found.set(manifest.name, { name: manifest.name, version: manifest.version, license: manifest.license });
  }
  return [...found.values()].sort((a, b) => a.name.localeCompare(b.name));
}

// The URL API always encodes as UTF-8; @exodus/bytes/encoding.js only registers the legacy
// multi-byte encoders (150 KB of tables) for documents in other encodings, which guests have not.
const noLegacyEncodings = {
  name: 'no-legacy-encodings',
  setup(b) {
    b.onResolve({ filter: /^@exodus\/bytes\/encoding\.js$/ }, () => ({ path: 'no-legacy-encodings', namespace: 'strata-empty' }));
    b.onLoad({ filter: /.*/, namespace: 'strata-empty' }, () => ({ contents: '', loader: 'js' }));
  },
};

// Large tables (tr46's IDNA mapping) as JSON.parse of a string: V8 scans a string literal much
// faster than it parses the same data as an array literal, and every context parses the bootstrap.
const jsonAsString = {
  name: 'json-as-string',
  setup(b) {
    b.onLoad({ filter: /\.json$/ }, (args) => {
      const text = JSON.stringify(JSON.parse(readFileSync(args.path, 'utf8')));
      return { contents: `module.exports = JSON.parse(${JSON.stringify(text)});`, loader: 'js' };
    });
  },
};

// urlpattern-polyfill 10.1.0 (the newest) is laxer or stricter than the URL Pattern standard in
// a dozen places, all in its dist file, which esbuild reads: each fix below replaces one exact
// piece of that file, and the build stops if a piece is not there exactly once (a new version:
// check each fix against it, drop the ones it made unnecessary). test/url-pattern-wpt.test.ts
// runs the standard's test data, test/url.test.ts a case for each fix.
const URL_PATTERN_FIXES = [
  {
    why: 'a group name is read by code point (ID_Start / ID_Continue), not by UTF-16 code unit',
    find: 'let i=e.substr(s,1);if(s===n+1&&Re.test(i)||s!==n+1&&Ee.test(i)){f+=e[s++];continue}break}',
    replace: 'let i=String.fromCodePoint(e.codePointAt(s));if(s===n+1&&Re.test(i)||s!==n+1&&Ee.test(i)){f+=i;s+=i.length;continue}break}',
  },
  {
    why: 'a backslash that ends a pattern is a tokenizing error (a TypeError), not an escape of nothing',
    find: 'if(c==="\\\\"){r.push({type:"ESCAPED_CHAR",index:n++,value:e[n++]});continue}',
    replace: 'if(c==="\\\\"){if(n===e.length-1){l(`Trailing backslash at ${n}`);continue}r.push({type:"ESCAPED_CHAR",index:n++,value:e[n++]});continue}',
  },
  {
    why: 'regexp groups compile with the v flag, as the standard says (set operations in classes)',
    find: 'function B(e){return e&&e.ignoreCase?"ui":"u"}',
    replace: 'function B(e){return e&&e.ignoreCase?"vi":"v"}',
  },
  {
    why: 'ports are canonicalised by the URL parser (strataCanonicalPort), the default port of the protocol giving ""',
    find: 'function G(e){if(e===""||/^[0-9]*$/.test(e)&&parseInt(e)<=65535)return e;throw new TypeError(`Invalid port \'${e}\'.`)}',
    replace: 'function G(e){return strataCanonicalPort(e)}',
  },
  {
    why: 'an input port is canonicalised with its protocol before the default port is dropped',
    find: 'function le(e,t,r){return z(t)===e&&(e=""),r||e===""?e:G(e)}',
    replace: 'function le(e,t,r){return z(t)===e&&(e=""),r||e===""?e:strataCanonicalPort(e,t)}',
  },
  {
    why: "an input pathname is canonicalised by the URL parser's path state (strataCanonicalPathname): a ? or # in it is encoded, not the end of the path",
    find: 'function ce(e,t,r){if(r||e==="")return e;if(t&&!re.includes(t))return new URL(`${t}:${e}`).pathname;let n=e[0]=="/";return e=new URL(n?e:"/-"+e,"https://example.com").pathname,n||(e=e.substring(2,e.length)),e}',
    replace: 'function ce(e,t,r){return r||e===""?e:strataCanonicalPathname(e,t)}',
  },
  {
    why: "a pathname pattern likewise: a \\ in it stays a character, as on the standard's dummy URL (not special)",
    find: 'function de(e){if(e==="")return e;let t=new URL("https://example.com");return t.pathname=e[0]!=="/"?"/-"+e:e,e[0]!=="/"?t.pathname.substring(2,t.pathname.length):t.pathname}',
    replace: 'function de(e){return strataCanonicalPathname(e)}',
  },
  {
    why: "an opaque pathname pattern is canonicalised by the URL parser's opaque path state",
    find: 'function pe(e){return e===""?e:new URL(`data:${e}`).pathname}',
    replace: 'function pe(e){return strataCanonicalOpaquePathname(e)}',
  },
  {
    why: "a protocol starts with an ASCII letter (the URL parser's scheme state)",
    find: 'function w(e){if(e==="")return e;if(/^[-+.A-Za-z0-9]*$/.test(e))return e.toLowerCase();throw new TypeError(`Invalid protocol \'${e}\'.`)}',
    replace: 'function w(e){return strataCanonicalProtocol(e)}',
  },
  {
    why: "a search is canonicalised once, by the URL parser's query state: the setter it used dropped a second leading ?",
    find: 'function ge(e){if(e==="")return e;let t=new URL("https://example.com");return t.search=e,t.search.substring(1,t.search.length)}',
    replace: 'function ge(e){return strataCanonicalSearch(e)}',
  },
  {
    why: 'an input search likewise (after its one leading ? is dropped)',
    find: 'let r=new URL("https://example.com");return r.search=e,r.search?r.search.substring(1,r.search.length):""}',
    replace: 'return strataCanonicalSearch(e)}',
  },
  {
    why: "a hash is canonicalised once, by the URL parser's fragment state: the setter it used dropped a second leading #",
    find: 'function me(e){if(e==="")return e;let t=new URL("https://example.com");return t.hash=e,t.hash.substring(1,t.hash.length)}',
    replace: 'function me(e){return strataCanonicalHash(e)}',
  },
  {
    why: 'an input hash likewise (after its one leading # is dropped)',
    find: 'let r=new URL("https://example.com");return r.hash=e,r.hash?r.hash.substring(1,r.hash.length):""}',
    replace: 'return strataCanonicalHash(e)}',
  },
  {
    why: 'a URL string input keeps the ? and # its search and hash start with: processing drops one, so "https://x/??a" has the search "?a", not "a"',
    find: 'search:r.search!==""?r.search.substring(1,r.search.length):void 0,hash:r.hash!==""?r.hash.substring(1,r.hash.length):void 0}',
    replace: 'search:r.search!==""?r.search:void 0,hash:r.hash!==""?r.hash:void 0}',
  },
  {
    why: 'hostnames are canonicalised by the URL parser (strataCanonicalHostname), not refused by a character list',
    find: 'function j(e){if(e==="")return e;if(/[\\t\\n\\r #%/:<>?@[\\]^\\\\|]/g.test(e))throw new TypeError(`Invalid hostname \'${e}\'`);let t=new URL("https://example.com");return t.hostname=e,t.hostname}',
    replace: 'function j(e){return strataCanonicalHostname(e)}',
  },
];

const urlPatternToStandard = {
  name: 'url-pattern-to-standard',
  setup(b) {
    b.onLoad({ filter: /[/\\]urlpattern-polyfill[/\\]dist[/\\]urlpattern\.js$/ }, (args) => {
      let text = readFileSync(args.path, 'utf8');
      for (const { why, find, replace } of URL_PATTERN_FIXES) {
        const count = text.split(find).length - 1;
        if (count !== 1) {
          return { errors: [{ text: `urlpattern-polyfill changed: the fix "${why}" finds its text ${count} times, not once (scripts/bundle.mjs)` }] };
        }
        text = text.replace(find, () => replace);
      }
      // Imported by this module alone: injected into every module, it would import whatwg-url from
      // inside whatwg-url's own modules (a cycle that leaves its exports empty).
      const canonical = JSON.stringify(new URL('scripts/bundle/url-pattern-canonical.js', root).pathname);
      const names =
        'strataCanonicalPort, strataCanonicalHostname, strataCanonicalPathname, strataCanonicalOpaquePathname, strataCanonicalProtocol, strataCanonicalSearch, strataCanonicalHash';
      return { contents: `import { ${names} } from ${canonical};\n${text}`, loader: 'js' };
    });
  },
};

// Node built-ins must never be reached: punycode is the npm package (tr46 asks for "punycode/").
const noNodeBuiltins = (what) => ({
  name: 'no-node-builtins',
  setup(b) {
    b.onResolve({ filter: /^node:|^(punycode|buffer|util|process|events|stream|crypto)$/ }, (args) => ({
      errors: [{ text: `the ${what} must not use the Node built-in "${args.path}" (imported by ${args.importer})` }],
    }));
  },
});

// One IIFE bundle, checked: its code and the packages that went into it.
async function bundle({ what, entry, globalName, keepNames = false, inject = [], plugins = [] }) {
  const result = await build({
    entryPoints: [new URL(entry, root).pathname],
    bundle: true,
    write: false,
    format: 'iife',
    // The IIFE's value: the installer takes what it needs from it and defines the globals itself
    // (writable, configurable, not enumerable).
    globalName,
    platform: 'neutral',
    mainFields: ['main', 'module'],
    conditions: ['import', 'default'],
    target: 'es2022',
    minify: true,
    keepNames,
    charset: 'ascii',
    legalComments: 'none',
    inject: inject.map((file) => new URL(file, root).pathname),
    plugins: [noNodeBuiltins(what), ...plugins],
    logLevel: 'warning',
    metafile: true,
    absWorkingDir: new URL('.', root).pathname,
  });
  const code = result.outputFiles[0].text.trim();
  // whatwg-url's utils.js calls `.eval` on its own global stand-in, an object without one (the
  // TypeError is caught): a member call, not the global eval, hence the lookbehind.
  for (const forbidden of [/(?<![.\w$])eval\s*\(/, /\bnew\s+Function\b/, /\bFunction\s*\(/, /\brequire\s*\(/, /\bimport\s*\(/]) {
    if (forbidden.test(code)) throw new Error(`the ${what} matches ${forbidden}: the bootstrap must load without code generation`);
  }
  return { code, packages: bundledPackages(result.metafile) };
}

const out = new URL('src/generated/', root);
mkdirSync(out, { recursive: true });

// Writes src/generated/<file>: the bundle's script text and the list of its packages.
function writeBundleModule(file, constant, doc, { code, packages }) {
  writeFileSync(
    new URL(file, out),
    [
      '// Generated by scripts/bundle.mjs (npm run build): do not edit.',
      `// ${packages.map((p) => `${p.name} ${p.version} (${p.license})`).join(', ')}.`,
      '',
      '/** The bundled packages, for the licence notice. @internal */',
      `export const ${constant}_PACKAGES: ReadonlyArray<{ name: string; version: string; license: string }> = ${JSON.stringify(packages)};`,
      '',
      '/**',
      ...doc.map((line) => ` * ${line}`),
      ' */',
      `export const ${constant}: string = ${JSON.stringify(code)};`,
      '',
    ].join('\n'),
  );
  console.log(`scripts/bundle.mjs: src/generated/${file}, ${Buffer.byteLength(code)} bytes of bundle`);
}

const url = await bundle({
  what: 'URL bundle',
  entry: 'scripts/bundle/url-entry.js',
  globalName: 'strataUrlBundle',
  // URL.name is 'URL', not what the minifier renamed the class to.
  keepNames: true,
  inject: ['scripts/bundle/url-globals.js'],
  plugins: [noLegacyEncodings, jsonAsString, urlPatternToStandard],
});
writeBundleModule(
  'url-bundle.ts',
  'URL_BUNDLE',
  [
    'Script text declaring `var strataUrlBundle = { URL, URLSearchParams, URLPattern }`, with',
    'free references to `TextEncoder` and `TextDecoder` (the installer binds them). @internal',
  ],
  url,
);

const crypto = await bundle({
  what: 'crypto bundle',
  entry: 'scripts/bundle/crypto-entry.js',
  globalName: 'strataCryptoBundle',
});
writeBundleModule(
  'crypto-bundle.ts',
  'CRYPTO_BUNDLE',
  [
    'Script text declaring `var strataCryptoBundle = { hmac, sha1, sha256, sha384, sha512 }`: the hash',
    'functions of @noble/hashes, each taking and returning a Uint8Array, and `hmac(hash, key, message)`. @internal',
  ],
  crypto,
);

const streams = await bundle({
  what: 'streams bundle',
  entry: 'scripts/bundle/streams-entry.js',
  globalName: 'strataStreamsBundle',
  // ReadableStream.name is 'ReadableStream', not what the minifier renamed the class to.
  keepNames: true,
});
writeBundleModule(
  'streams-bundle.ts',
  'STREAMS_BUNDLE',
  [
    'Script text declaring `var strataStreamsBundle = { ReadableStream, WritableStream, TransformStream, ... }`:',
    "the classes of web-streams-polyfill's ponyfill, with free references to the built-ins and to",
    '`globalThis`, `queueMicrotask`, `AbortController` and `structuredClone` (installStreams binds them). @internal',
  ],
  streams,
);

const compression = await bundle({
  what: 'compression bundle',
  entry: 'scripts/bundle/compression-entry.js',
  globalName: 'strataCompressionBundle',
});
writeBundleModule(
  'compression-bundle.ts',
  'COMPRESSION_BUNDLE',
  [
    "Script text declaring `var strataCompressionBundle = { Deflate, Gzip, Zlib, Inflate }`: fflate's",
    'synchronous streaming classes, with free references to the built-ins it uses (installCompression',
    'binds them, and binds `Date` to undefined). @internal',
  ],
  compression,
);

// navigator.userAgent names the version; generated so the bootstrap needs no package.json at run time.
const { version } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
writeFileSync(
  new URL('version.ts', out),
  `// Generated by scripts/bundle.mjs (npm run build) from package.json: do not edit.\n\n/** This package's version. @internal */\nexport const PACKAGE_VERSION = ${JSON.stringify(version)};\n`,
);
