// ava runs the compiled tests: tsc writes test/*.ts to dist/test/*.js.
export default {
  files: ['test/**/*.test.ts'],
  typescript: { rewritePaths: { 'test/': 'dist/test/' }, compile: false },
  timeout: '120s',
  workerThreads: false,
  // The in-process Runtime's buffer cap is exact only where V8's gc() exists, as in every
  // Strata worker; the tests run the in-process Runtime the same way.
  nodeArguments: ['--expose-gc'],
};
