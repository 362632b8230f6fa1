# The seatbelt addon (native/seatbelt.c): sandbox_init() from Node. Built by node-gyp at install,
# against the headers of the Node 24 that npm installed (native/scripts/build.mjs of
# @strata/runtime picks them). macOS only: elsewhere the target is empty, node-gyp succeeds
# doing nothing, and src/addon.ts says so.
{
  'target_defaults': {
    'include_dirs': [
      # strata-napi.h, the Node-API helpers every Strata addon shares.
      "<!(node -p \"require('path').join(require('path').dirname(require.resolve('@strata/runtime/package.json')), 'native')\")",
    ],
  },
  'targets': [
    {
      'target_name': 'strata_seatbelt',
      'conditions': [
        ['OS=="mac"', {
          'type': 'loadable_module',
          'sources': ['native/seatbelt.c'],
          'xcode_settings': {
            'GCC_C_LANGUAGE_STANDARD': 'gnu11',
            'OTHER_CFLAGS': ['-Wall', '-Wextra', '-Wunused-parameter', '-Werror'],
          },
        }, {
          'type': 'none',
        }],
      ],
    },
  ],
}
