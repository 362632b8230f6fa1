# The pre-exec helper strata-emptyroot (native/emptyroot.c), built by node-gyp at install into
# build/Release (native/scripts/build.mjs of @strata/runtime picks Node 24's headers). Linux only:
# elsewhere the target is empty and the layer's probe says so.
{
  'target_defaults': {
    'cflags_c': ['-std=gnu11', '-Wall', '-Wextra', '-Wunused-parameter', '-Werror'],
  },
  'targets': [
    {
      'target_name': 'strata-emptyroot',
      'conditions': [
        ['OS=="linux"', {
          'type': 'executable',
          'sources': ['native/emptyroot.c'],
          'ldflags': ['-Wl,-z,relro,-z,now'],
        }, {
          'type': 'none',
        }],
      ],
    },
  ],
}
