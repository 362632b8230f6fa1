// ava runs the compiled tests: tsc writes test/*.ts to dist/test/*.js.
// Nothing here applies a profile to ava's own process: on Linux the layer is only planned and probed.
export default {
  files: ['test/**/*.test.ts'],
  typescript: { rewritePaths: { 'test/': 'dist/test/' }, compile: false },
  timeout: '120s',
  workerThreads: false,
};
