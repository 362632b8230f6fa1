// ava runs the compiled tests: tsc writes test/*.ts to dist/test/*.js.
// No test ever installs the filter in ava's own process: the end-to-end tests spawn a child.
export default {
  files: ['test/**/*.test.ts'],
  typescript: { rewritePaths: { 'test/': 'dist/test/' }, compile: false },
  timeout: '120s',
  workerThreads: false,
};
