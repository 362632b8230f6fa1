// ava runs the compiled tests: tsc writes test/*.ts to dist/test/*.js.
// No test ever restricts ava's own process: namespaces are entered in spawned children.
export default {
  files: ['test/**/*.test.ts'],
  typescript: { rewritePaths: { 'test/': 'dist/test/' }, compile: false },
  timeout: '120s',
  workerThreads: false,
};
