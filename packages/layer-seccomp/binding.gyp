# The seccomp addon (native/seccomp.c) and the pre-exec helper strata-no-io-uring (native/no-io-uring.c). Built by node-gyp at install, against the headers of the
# Node 24 that npm installed (native/scripts/build.mjs picks them). Linux only: elsewhere the targets
# are empty and src/addon.ts says so.
{
  # Set by @strata/runtime's native/scripts/build.mjs (node-gyp --strata_static_pie=1) when the compiler links static-pie.
  'variables': { 'strata_static_pie%': 0 },
  'target_defaults': {
    'cflags_c': ['-std=gnu11', '-Wall', '-Wextra', '-Wunused-parameter', '-Werror'],
    'include_dirs': [
      # strata-napi.h, the Node-API helpers every Strata addon shares.
      "<!(node -p \"require('path').join(require('path').dirname(require.resolve('@strata/runtime/package.json')), 'native')\")",
    ],
  },
  'targets': [
    {
      'target_name': 'strata-no-io-uring',
      'conditions': [
        ['OS=="linux"', {
          'type': 'executable',
          'sources': ['native/no-io-uring.c'],
          'ldflags': ['-Wl,-z,relro,-z,now'],
          # A launch-chain helper: static-pie where the compiler can link it (@strata/runtime's native/scripts/static-pie.mjs).
          'conditions': [['strata_static_pie==1', { 'ldflags': ['-static-pie'] }]],
        }, {
          'type': 'none',
        }],
      ],
    },
    {
      'target_name': 'strata_seccomp',
      'conditions': [
        ['OS=="linux"', {
          'type': 'loadable_module',
          'sources': ['native/seccomp.c'],
        }, {
          'type': 'none',
        }],
      ],
    },
  ],
}
