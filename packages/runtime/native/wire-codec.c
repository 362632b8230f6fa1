/*
 * strata_wire.node — the worker's side of @strata/wire's CBOR frames, in C.
 *
 *   encodeFrame(message, maxDepth, maxNodes, maxStringBytes, maxFrameBytes)
 *       a complete frame (4-byte big-endian length, then the CBOR body) in a new Buffer, or
 *       undefined: "not mine, use the JavaScript encoder"
 *   decodeBody(body, maxDepth, maxNodes, maxStringBytes)
 *       the value of one frame body (a Uint8Array), or undefined: "use the strict decoder"
 *   decodeFrames(chunk, length, maxFrameBytes, maxDepth, maxNodes, maxStringBytes)
 *       the values of the whole frames that fill chunk's first length bytes, or undefined
 *
 * Why: the worker runs with --jitless (V8's flag is per process), so @strata/wire's codec runs
 * interpreted there, and a small command cost tens of microseconds to decode and to encode its
 * answer. Here it costs about one.
 *
 * Not a second codec: a fast path for the plain messages that make up the traffic. It handles
 * null, undefined, booleans, numbers, strings, Uint8Arrays, arrays and plain objects. Anything
 * else -- a Date, bigint, Map or Set (the tagged forms), a "__proto__" key, a duplicate key, a
 * lone surrogate, a crossed limit, a malformed byte -- makes it answer undefined, and the caller
 * runs the JavaScript codec, which encodes the value or refuses it with its own error. So every
 * frame written here is one the JavaScript encoder would accept and the parent's strict decoder
 * accepts (a subset of its forms: shortest heads, integers with at most a 4-byte argument, else
 * float64), and every value read is the one the strict decoder would build. The parent never
 * uses this module: it decodes what a possibly compromised worker sends with the strict decoder.
 *
 * What it assumes of a value to encode: that its objects are data. The worker only sends values
 * it built itself or copied out of a guest's isolate (isolated-vm's copies are structured
 * clones: no getters, no proxies, no symbol keys), so reading a property runs no code. It still
 * refuses non-enumerable and symbol keys, prototypes other than Object.prototype and null, and
 * arrays that are not plain. A nested call (which only a getter could make) answers undefined.
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strata-napi.h"

/* Handles opened in one scope before it is closed and opened again, in long arrays and maps. */
#define HANDLES_PER_SCOPE 256
/* The scratch buffer shrinks back to this after a frame that made it larger than SHRINK_ABOVE. */
#define SCRATCH_BYTES (64 * 1024)
#define SHRINK_ABOVE (1024 * 1024)

/* What the module keeps per Node environment (napi_set_instance_data). */
typedef struct {
  napi_ref object_prototype;
  napi_ref array_prototype;
  napi_ref uint8array_prototype;
  napi_ref buffer_prototype;
  uint8_t *scratch; /* the frame being encoded */
  size_t capacity;
  uint16_t *units; /* a string's UTF-16 code units, while it is encoded */
  size_t units_capacity;
  bool busy; /* set while a call runs: a nested call answers undefined */
} codec_state;

/* ---- encoding -------------------------------------------------------------------------------- */

/* Why an encode gave up: BAIL hands the value to the JavaScript encoder; FAILED leaves an exception pending. */
typedef enum { OK = 0, BAIL, FAILED } outcome;

typedef struct {
  napi_env env;
  codec_state *state;
  size_t length;
  uint32_t max_depth;
  double max_nodes;
  double max_string_bytes;
  double max_frame_bytes;
  double nodes;
  napi_value object_prototype, array_prototype, uint8array_prototype, buffer_prototype;
} encoder;

#define TRY(call)                      \
  do {                                 \
    outcome tried = (call);            \
    if (tried != OK) return tried;     \
  } while (0)
#define NAPI(call)                       \
  do {                                   \
    if ((call) != napi_ok) return FAILED; \
  } while (0)

/*
 * Runs step(context, i) for i from 0 to count - 1, HANDLES_PER_SCOPE at a time inside a handle
 * scope of their own: the handles a long array or map makes are released as it goes, not held
 * until the call returns. Stops at the first outcome that is not OK.
 */
static outcome scoped_steps(napi_env env, uint32_t count, outcome (*step)(void *context, uint32_t i), void *context) {
  for (uint32_t start = 0; start < count; start += HANDLES_PER_SCOPE) {
    napi_handle_scope scope;
    NAPI(napi_open_handle_scope(env, &scope));
    outcome result = OK;
    uint32_t end = count - start > HANDLES_PER_SCOPE ? start + HANDLES_PER_SCOPE : count;
    for (uint32_t i = start; i < end && result == OK; i++) result = step(context, i);
    if (napi_close_handle_scope(env, scope) != napi_ok && result == OK) result = FAILED;
    if (result != OK) return result;
  }
  return OK;
}

/* Room for `more` bytes; BAIL past maxFrameBytes (plus the header). */
static outcome reserve(encoder *e, size_t more) {
  size_t needed = e->length + more;
  if ((double)needed > e->max_frame_bytes + 4) return BAIL;
  if (needed <= e->state->capacity) return OK;
  size_t capacity = e->state->capacity;
  while (capacity < needed) capacity *= 2;
  uint8_t *grown = realloc(e->state->scratch, capacity);
  if (grown == NULL) return BAIL; /* the JavaScript encoder reports it (or runs out of memory itself) */
  e->state->scratch = grown;
  e->state->capacity = capacity;
  return OK;
}

/* A head in its shortest form: major type and a 32-bit argument. */
static outcome head(encoder *e, uint8_t major, uint32_t arg) {
  TRY(reserve(e, 5));
  uint8_t *p = e->state->scratch + e->length;
  major <<= 5;
  if (arg < 24) {
    p[0] = major | (uint8_t)arg;
    e->length += 1;
  } else if (arg < 0x100) {
    p[0] = major | 24;
    p[1] = (uint8_t)arg;
    e->length += 2;
  } else if (arg < 0x10000) {
    p[0] = major | 25;
    p[1] = (uint8_t)(arg >> 8);
    p[2] = (uint8_t)arg;
    e->length += 3;
  } else {
    p[0] = major | 26;
    p[1] = (uint8_t)(arg >> 24);
    p[2] = (uint8_t)(arg >> 16);
    p[3] = (uint8_t)(arg >> 8);
    p[4] = (uint8_t)arg;
    e->length += 5;
  }
  return OK;
}

static outcome count_node(encoder *e) {
  return ++e->nodes > e->max_nodes ? BAIL : OK;
}

static outcome byte(encoder *e, uint8_t b) {
  TRY(reserve(e, 1));
  e->state->scratch[e->length++] = b;
  return OK;
}

static outcome number(encoder *e, double d) {
  /* integers as the JavaScript encoder writes them: at most a 4-byte argument, -0 as a float */
  if (d >= 0 && d <= 4294967295.0 && d == (double)(uint32_t)d && !(d == 0 && 1 / d < 0)) return head(e, 0, (uint32_t)d);
  if (d < 0 && d >= -4294967296.0 && d == (double)(int64_t)d) return head(e, 1, (uint32_t)(-1 - (int64_t)d));
  TRY(reserve(e, 9));
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  uint8_t *p = e->state->scratch + e->length;
  p[0] = 0xfb;
  for (int i = 0; i < 8; i++) p[1 + i] = (uint8_t)(bits >> (56 - 8 * i));
  e->length += 9;
  return OK;
}

/* A text string, as well-formed UTF-8; BAIL on a lone surrogate or past maxStringBytes. */
static outcome text(encoder *e, napi_value value) {
  size_t count;
  NAPI(napi_get_value_string_utf16(e->env, value, NULL, 0, &count));
  codec_state *state = e->state;
  if (count + 1 > state->units_capacity) {
    size_t capacity = state->units_capacity == 0 ? 256 : state->units_capacity;
    while (capacity < count + 1) capacity *= 2;
    uint16_t *grown = realloc(state->units, capacity * sizeof *grown);
    if (grown == NULL) return BAIL;
    state->units = grown;
    state->units_capacity = capacity;
  }
  size_t copied;
  NAPI(napi_get_value_string_utf16(e->env, value, state->units, count + 1, &copied));
  const uint16_t *u = state->units;
  /* first pass: the UTF-8 length, and well-formedness */
  size_t bytes = 0;
  for (size_t i = 0; i < copied; i++) {
    uint16_t c = u[i];
    if (c < 0x80) {
      bytes += 1;
    } else if (c < 0x800) {
      bytes += 2;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      if (c > 0xdbff || i + 1 >= copied || u[i + 1] < 0xdc00 || u[i + 1] > 0xdfff) return BAIL;
      bytes += 4;
      i++;
    } else {
      bytes += 3;
    }
  }
  if ((double)bytes > e->max_string_bytes || bytes > UINT32_MAX) return BAIL;
  TRY(head(e, 3, (uint32_t)bytes));
  TRY(reserve(e, bytes));
  uint8_t *p = e->state->scratch + e->length;
  for (size_t i = 0; i < copied; i++) {
    uint32_t c = u[i];
    if (c < 0x80) {
      *p++ = (uint8_t)c;
    } else if (c < 0x800) {
      *p++ = (uint8_t)(0xc0 | (c >> 6));
      *p++ = (uint8_t)(0x80 | (c & 0x3f));
    } else if (c >= 0xd800 && c <= 0xdbff) {
      c = 0x10000 + ((c - 0xd800) << 10) + (u[++i] - 0xdc00u);
      *p++ = (uint8_t)(0xf0 | (c >> 18));
      *p++ = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
      *p++ = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
      *p++ = (uint8_t)(0x80 | (c & 0x3f));
    } else {
      *p++ = (uint8_t)(0xe0 | (c >> 12));
      *p++ = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
      *p++ = (uint8_t)(0x80 | (c & 0x3f));
    }
  }
  e->length += bytes;
  return OK;
}

static outcome is(encoder *e, napi_value a, napi_value b, bool *same) {
  NAPI(napi_strict_equals(e->env, a, b, same));
  return OK;
}

static outcome value(encoder *e, napi_value v, uint32_t depth);

/* Whether `v` has an own property `name` (an ASCII name). */
static outcome has_own(encoder *e, napi_value v, const char *name, bool *own) {
  napi_value key;
  NAPI(napi_create_string_latin1(e->env, name, NAPI_AUTO_LENGTH, &key));
  NAPI(napi_has_own_property(e->env, v, key, own));
  return OK;
}

/* A Uint8Array or Buffer with nothing of its own (the JavaScript encoder's rule). */
static outcome bytes_of(encoder *e, napi_value v) {
  napi_typedarray_type type;
  size_t length, offset;
  void *data;
  napi_value arraybuffer, proto;
  NAPI(napi_get_typedarray_info(e->env, v, &type, &length, &data, &arraybuffer, &offset));
  if (type != napi_uint8_array) return BAIL;
  NAPI(napi_get_prototype(e->env, v, &proto));
  bool plain, buffer;
  TRY(is(e, proto, e->uint8array_prototype, &plain));
  TRY(is(e, proto, e->buffer_prototype, &buffer));
  if (!plain && !buffer) return BAIL;
  static const char *const fields[] = {"constructor", "buffer", "byteLength", "byteOffset", "length"};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    bool own;
    TRY(has_own(e, v, fields[i], &own));
    if (own) return BAIL;
  }
  if ((double)length > e->max_string_bytes || length > UINT32_MAX) return BAIL;
  TRY(head(e, 2, (uint32_t)length));
  TRY(reserve(e, length));
  if (length > 0) memcpy(e->state->scratch + e->length, data, length);
  e->length += length;
  return OK;
}

/* A container being encoded, for scoped_steps: the array or object, its keys, and its depth. */
typedef struct {
  encoder *e;
  napi_value v;
  napi_value keys;
  uint32_t depth;
} container;

static outcome array_element(void *context, uint32_t i) {
  container *c = context;
  napi_value element;
  napi_valuetype type;
  NAPI(napi_get_element(c->e->env, c->v, i, &element));
  NAPI(napi_typeof(c->e->env, element, &type));
  if (type == napi_undefined) {
    bool present;
    NAPI(napi_has_element(c->e->env, c->v, i, &present));
    if (!present) return BAIL; /* a hole: the JavaScript encoder refuses it */
  }
  return value(c->e, element, c->depth);
}

static outcome object_property(void *context, uint32_t i) {
  container *c = context;
  napi_value key, property;
  NAPI(napi_get_element(c->e->env, c->keys, i, &key));
  NAPI(napi_get_property(c->e->env, c->v, key, &property));
  TRY(text(c->e, key));
  return value(c->e, property, c->depth);
}

static outcome array(encoder *e, napi_value v, uint32_t depth) {
  napi_value proto;
  bool plain, own;
  NAPI(napi_get_prototype(e->env, v, &proto));
  TRY(is(e, proto, e->array_prototype, &plain));
  if (!plain) return BAIL;
  TRY(has_own(e, v, "constructor", &own));
  if (own) return BAIL;
  uint32_t length;
  NAPI(napi_get_array_length(e->env, v, &length));
  TRY(head(e, 4, length));
  container c = {e, v, NULL, depth};
  return scoped_steps(e->env, length, array_element, &c);
}

static outcome object(encoder *e, napi_value v, uint32_t depth) {
  napi_value proto;
  napi_valuetype proto_type;
  NAPI(napi_get_prototype(e->env, v, &proto));
  NAPI(napi_typeof(e->env, proto, &proto_type));
  if (proto_type != napi_null) {
    bool plain;
    TRY(is(e, proto, e->object_prototype, &plain));
    if (!plain) return BAIL;
  }
  napi_value keys, every;
  uint32_t count, every_count;
  NAPI(napi_get_all_property_names(e->env, v, napi_key_own_only, napi_key_enumerable | napi_key_skip_symbols, napi_key_numbers_to_strings, &keys));
  NAPI(napi_get_all_property_names(e->env, v, napi_key_own_only, napi_key_all_properties, napi_key_numbers_to_strings, &every));
  NAPI(napi_get_array_length(e->env, keys, &count));
  NAPI(napi_get_array_length(e->env, every, &every_count));
  /* a non-enumerable or symbol key: the JavaScript encoder refuses it */
  if (count != every_count) return BAIL;
  e->nodes += count;
  if (e->nodes > e->max_nodes) return BAIL;
  TRY(head(e, 5, count));
  container c = {e, v, keys, depth};
  return scoped_steps(e->env, count, object_property, &c);
}

/* One value at `depth` (the number of containers around it). */
static outcome value(encoder *e, napi_value v, uint32_t depth) {
  TRY(count_node(e));
  napi_valuetype type;
  NAPI(napi_typeof(e->env, v, &type));
  switch (type) {
    case napi_undefined:
      return byte(e, 0xf7);
    case napi_null:
      return byte(e, 0xf6);
    case napi_boolean: {
      bool b;
      NAPI(napi_get_value_bool(e->env, v, &b));
      return byte(e, b ? 0xf5 : 0xf4);
    }
    case napi_number: {
      double d;
      NAPI(napi_get_value_double(e->env, v, &d));
      return number(e, d);
    }
    case napi_string:
      return text(e, v);
    case napi_object: {
      bool yes;
      if (depth + 1 > e->max_depth) return BAIL;
      NAPI(napi_is_array(e->env, v, &yes));
      if (yes) return array(e, v, depth + 1);
      NAPI(napi_is_typedarray(e->env, v, &yes));
      if (yes) return bytes_of(e, v);
      /* Dates, Maps, Sets and the rest have prototypes of their own, which object() refuses */
      return object(e, v, depth + 1);
    }
    default:
      /* bigint (tagged or 64-bit forms), symbol, function, external */
      return BAIL;
  }
}

/* Reads a limit argument: a positive number. */
static bool limit_arg(napi_env env, napi_value v, double *out) {
  napi_valuetype type;
  if (napi_typeof(env, v, &type) != napi_ok || type != napi_number || napi_get_value_double(env, v, out) != napi_ok || !(*out >= 1)) {
    napi_throw_range_error(env, "ERR_STRATA_WIRE_LIMIT", "strata_wire: a limit must be a number of at least 1");
    return false;
  }
  return true;
}

static napi_value get_ref(napi_env env, napi_ref ref) {
  napi_value v;
  CHECK(env, napi_get_reference_value(env, ref, &v));
  return v;
}

/* Throws `message` unless a Node-API call already left an exception pending. */
static void fail_loudly(napi_env env, const char *code, const char *message) {
  bool pending;
  napi_is_exception_pending(env, &pending);
  if (!pending) napi_throw_error(env, code, message);
}

static napi_value encode_frame(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5], undefined;
  codec_state *state;
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  CHECK(env, napi_get_instance_data(env, (void **)&state));
  CHECK(env, napi_get_undefined(env, &undefined));
  if (argc < 5) {
    napi_throw_type_error(env, "ERR_STRATA_WIRE_ARGUMENTS", "strata_wire: encodeFrame(message, maxDepth, maxNodes, maxStringBytes, maxFrameBytes)");
    return NULL;
  }
  double max_depth;
  encoder e = {.env = env, .state = state, .length = 4};
  if (!limit_arg(env, argv[1], &max_depth) || !limit_arg(env, argv[2], &e.max_nodes) || !limit_arg(env, argv[3], &e.max_string_bytes) ||
      !limit_arg(env, argv[4], &e.max_frame_bytes))
    return NULL;
  if (state->busy) return undefined;
  e.max_depth = max_depth > 1000 ? 1000 : (uint32_t)max_depth;
  if ((e.object_prototype = get_ref(env, state->object_prototype)) == NULL || (e.array_prototype = get_ref(env, state->array_prototype)) == NULL ||
      (e.uint8array_prototype = get_ref(env, state->uint8array_prototype)) == NULL || (e.buffer_prototype = get_ref(env, state->buffer_prototype)) == NULL)
    return NULL;
  state->busy = true;
  outcome result = value(&e, argv[0], 0);
  state->busy = false;
  napi_value frame = undefined;
  if (result == OK) {
    size_t body = e.length - 4;
    uint8_t *p = state->scratch;
    p[0] = (uint8_t)(body >> 24);
    p[1] = (uint8_t)(body >> 16);
    p[2] = (uint8_t)(body >> 8);
    p[3] = (uint8_t)body;
    void *copy;
    if (napi_create_buffer_copy(env, e.length, state->scratch, &copy, &frame) != napi_ok) result = FAILED;
  }
  if (state->units_capacity * sizeof *state->units > SHRINK_ABOVE) {
    free(state->units);
    state->units = NULL;
    state->units_capacity = 0;
  }
  if (state->capacity > SHRINK_ABOVE) {
    uint8_t *smaller = realloc(state->scratch, SCRATCH_BYTES);
    if (smaller != NULL) {
      state->scratch = smaller;
      state->capacity = SCRATCH_BYTES;
    }
  }
  if (result == FAILED) {
    fail_loudly(env, "ERR_STRATA_WIRE_ENCODE", "strata_wire: a Node-API call failed while encoding");
    return NULL;
  }
  return frame;
}

/* ---- decoding -------------------------------------------------------------------------------- */

typedef struct {
  napi_env env;
  const uint8_t *p;
  const uint8_t *end;
  uint32_t max_depth;
  double max_nodes;
  double max_string_bytes;
  double nodes;
} decoder;

/* The argument of a head whose first byte was `initial`; BAIL for a form the strict scan refuses. */
static outcome argument(decoder *d, uint8_t initial, uint32_t *arg) {
  uint8_t info = initial & 0x1f;
  if (info < 24) {
    *arg = info;
    return OK;
  }
  size_t size = info == 24 ? 1 : info == 25 ? 2 : info == 26 ? 4 : 0;
  if (size == 0 || (size_t)(d->end - d->p) < size) return BAIL; /* 64-bit (bigint), indefinite, reserved, truncated */
  uint32_t a = 0;
  for (size_t i = 0; i < size; i++) a = (a << 8) | d->p[i];
  d->p += size;
  /* shortest form only */
  if ((size == 1 && a < 24) || (size == 2 && a < 0x100) || (size == 4 && a < 0x10000)) return BAIL;
  *arg = a;
  return OK;
}

/* Well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF); *ascii when every byte is. */
static bool utf8_valid(const uint8_t *s, size_t n, bool *ascii) {
  *ascii = true;
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    *ascii = false;
    size_t extra;
    uint32_t min, cp;
    if (c >= 0xc2 && c <= 0xdf) {
      extra = 1, min = 0x80, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2, min = 0x800, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3, min = 0x10000, cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i <= extra) return false;
    for (size_t k = 1; k <= extra; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += extra + 1;
  }
  return true;
}

static outcome string_at(decoder *d, uint32_t length, napi_value *out) {
  if ((double)length > d->max_string_bytes || (size_t)(d->end - d->p) < length) return BAIL;
  bool ascii;
  if (!utf8_valid(d->p, length, &ascii)) return BAIL;
  const char *s = (const char *)d->p;
  if (ascii) NAPI(napi_create_string_latin1(d->env, s, length, out));
  else NAPI(napi_create_string_utf8(d->env, s, length, out));
  d->p += length;
  return OK;
}

static outcome item(decoder *d, uint32_t depth, napi_value *out);

/* A container being built, for scoped_steps. */
typedef struct {
  decoder *d;
  napi_value out;
  uint32_t depth;
} building;

static outcome array_item(void *context, uint32_t i) {
  building *b = context;
  napi_value element;
  TRY(item(b->d, b->depth, &element));
  NAPI(napi_set_element(b->d->env, b->out, i, element));
  return OK;
}

static outcome object_entry(void *context, uint32_t i) {
  (void)i;
  building *b = context;
  decoder *d = b->d;
  /* keys of plain objects are text strings */
  if (d->p >= d->end || (d->p[0] >> 5) != 3) return BAIL;
  uint8_t initial = *d->p++;
  uint32_t length;
  TRY(argument(d, initial, &length));
  if (++d->nodes > d->max_nodes) return BAIL;
  /* "__proto__" is built by the strict decoder, with defineProperty */
  if (length == 9 && (size_t)(d->end - d->p) >= 9 && memcmp(d->p, "__proto__", 9) == 0) return BAIL;
  napi_value key, property;
  bool duplicate;
  TRY(string_at(d, length, &key));
  TRY(item(d, b->depth, &property));
  NAPI(napi_has_own_property(d->env, b->out, key, &duplicate));
  if (duplicate) return BAIL;
  NAPI(napi_set_property(d->env, b->out, key, property));
  return OK;
}

static outcome decode_array(decoder *d, uint32_t count, uint32_t depth, napi_value *out) {
  /* every item takes at least a byte: a count beyond the rest of the body is a lie */
  if (count > (size_t)(d->end - d->p)) return BAIL;
  NAPI(napi_create_array_with_length(d->env, count, out));
  building b = {d, *out, depth};
  return scoped_steps(d->env, count, array_item, &b);
}

static outcome decode_object(decoder *d, uint32_t count, uint32_t depth, napi_value *out) {
  if (count > (size_t)(d->end - d->p) / 2) return BAIL;
  NAPI(napi_create_object(d->env, out));
  building b = {d, *out, depth};
  return scoped_steps(d->env, count, object_entry, &b);
}

/* One data item at `depth` (the number of containers around it). */
static outcome item(decoder *d, uint32_t depth, napi_value *out) {
  if (d->p >= d->end || ++d->nodes > d->max_nodes) return BAIL;
  uint8_t initial = *d->p++;
  uint8_t major = initial >> 5;
  if (major == 7) {
    switch (initial) {
      case 0xf4:
      case 0xf5:
        NAPI(napi_get_boolean(d->env, initial == 0xf5, out));
        return OK;
      case 0xf6:
        NAPI(napi_get_null(d->env, out));
        return OK;
      case 0xf7:
        NAPI(napi_get_undefined(d->env, out));
        return OK;
      case 0xfb: {
        if (d->end - d->p < 8) return BAIL;
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++) bits = (bits << 8) | d->p[i];
        d->p += 8;
        double value;
        memcpy(&value, &bits, sizeof value);
        NAPI(napi_create_double(d->env, value, out));
        return OK;
      }
      default:
        return BAIL; /* other simple values, float16 and float32 */
    }
  }
  uint32_t arg;
  TRY(argument(d, initial, &arg));
  switch (major) {
    case 0:
      NAPI(napi_create_double(d->env, (double)arg, out));
      return OK;
    case 1:
      NAPI(napi_create_double(d->env, -1.0 - (double)arg, out));
      return OK;
    case 2: {
      if ((double)arg > d->max_string_bytes || (size_t)(d->end - d->p) < arg) return BAIL;
      void *data;
      napi_value buffer;
      NAPI(napi_create_arraybuffer(d->env, arg, &data, &buffer));
      if (arg > 0) memcpy(data, d->p, arg);
      d->p += arg;
      NAPI(napi_create_typedarray(d->env, napi_uint8_array, arg, buffer, 0, out));
      return OK;
    }
    case 3:
      return string_at(d, arg, out);
    case 4:
      if (depth + 1 > d->max_depth) return BAIL;
      return decode_array(d, arg, depth + 1, out);
    case 5:
      if (depth + 1 > d->max_depth) return BAIL;
      return decode_object(d, arg, depth + 1, out);
    default:
      return BAIL; /* tags: Date, bignum, Set, Map */
  }
}

/*
 * One whole body: OK with its value in *out; BAIL for a body that is the strict decoder's to read
 * or refuse (anything item() hands back, trailing bytes); FAILED with an exception pending.
 */
static outcome decode_one(napi_env env, const uint8_t *bytes, size_t length, double max_depth, double max_nodes, double max_string_bytes,
                          napi_value *out) {
  decoder d = {.env = env, .p = bytes, .end = bytes + length, .max_nodes = max_nodes, .max_string_bytes = max_string_bytes};
  d.max_depth = max_depth > 1000 ? 1000 : (uint32_t)max_depth;
  outcome decoded = item(&d, 0, out);
  if (decoded == FAILED) fail_loudly(env, "ERR_STRATA_WIRE_DECODE", "strata_wire: a Node-API call failed while decoding");
  return decoded == OK && d.p != d.end ? BAIL : decoded;
}

/*
 * The arguments of the decoders: a typed array, then `count` limits (at most 5). False with an
 * exception thrown (`usage` for the wrong arguments). *uint8 says whether it is a Uint8Array.
 */
static bool bytes_and_limits(napi_env env, napi_callback_info info, const char *usage, size_t count, const uint8_t **bytes, size_t *length,
                             bool *uint8, double *limits) {
  napi_value argv[6];
  size_t argc = 6;
  bool typed = false;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || (argc >= 1 && napi_is_typedarray(env, argv[0], &typed) != napi_ok)) {
    fail_loudly(env, "ERR_STRATA_WIRE_ARGUMENTS", "strata_wire: cannot read the arguments");
    return false;
  }
  if (argc < count + 1 || !typed) {
    napi_throw_type_error(env, "ERR_STRATA_WIRE_ARGUMENTS", usage);
    return false;
  }
  napi_typedarray_type type;
  size_t offset;
  void *data;
  napi_value arraybuffer;
  if (napi_get_typedarray_info(env, argv[0], &type, length, &data, &arraybuffer, &offset) != napi_ok) {
    fail_loudly(env, "ERR_STRATA_WIRE_ARGUMENTS", "strata_wire: cannot read the bytes");
    return false;
  }
  for (size_t i = 0; i < count; i++) {
    if (!limit_arg(env, argv[1 + i], &limits[i])) return false;
  }
  *bytes = data;
  *uint8 = type == napi_uint8_array;
  return true;
}

static napi_value decode_body(napi_env env, napi_callback_info info) {
  const uint8_t *data;
  size_t length;
  bool uint8;
  double limits[3]; /* maxDepth, maxNodes, maxStringBytes */
  if (!bytes_and_limits(env, info, "strata_wire: decodeBody(body: Uint8Array, maxDepth, maxNodes, maxStringBytes)", 3, &data, &length, &uint8, limits))
    return NULL;
  napi_value undefined;
  CHECK(env, napi_get_undefined(env, &undefined));
  if (!uint8 || length == 0) return undefined;
  napi_value result;
  switch (decode_one(env, data, length, limits[0], limits[1], limits[2], &result)) {
    case OK:
      return result;
    case BAIL:
      return undefined;
    default:
      return NULL;
  }
}

/*
 * decodeFrames(chunk, length, maxFrameBytes, maxDepth, maxNodes, maxStringBytes): the values of
 * the whole frames that fill chunk[0, length) exactly, as an array; undefined when the bytes end
 * inside a frame, a frame is over maxFrameBytes, or any body is one decodeBody hands back (the
 * caller's FrameReader then reads the chunk from its start).
 */
static napi_value decode_frames(napi_env env, napi_callback_info info) {
  const uint8_t *p;
  size_t available;
  bool uint8;
  double limits[5]; /* length, maxFrameBytes, maxDepth, maxNodes, maxStringBytes */
  if (!bytes_and_limits(env, info, "strata_wire: decodeFrames(chunk: Uint8Array, length, maxFrameBytes, maxDepth, maxNodes, maxStringBytes)", 5, &p,
                        &available, &uint8, limits))
    return NULL;
  napi_value undefined;
  CHECK(env, napi_get_undefined(env, &undefined));
  const double length = limits[0], max_frame_bytes = limits[1], max_depth = limits[2], max_nodes = limits[3], max_string_bytes = limits[4];
  if (!uint8 || length > (double)available) return undefined;
  const uint8_t *end = p + (size_t)length;
  napi_value values;
  CHECK(env, napi_create_array(env, &values));
  for (uint32_t n = 0; p < end; n++) {
    if (end - p < 4) return undefined;
    uint32_t body = ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
    p += 4;
    if (body == 0 || (double)body > max_frame_bytes || (size_t)(end - p) < body) return undefined;
    napi_value value;
    outcome decoded = decode_one(env, p, body, max_depth, max_nodes, max_string_bytes, &value);
    if (decoded != OK) return decoded == BAIL ? undefined : NULL;
    CHECK(env, napi_set_element(env, values, n, value));
    p += body;
  }
  return values;
}

/* ---- the module ------------------------------------------------------------------------------ */

static void free_state(napi_env env, void *data, void *hint) {
  (void)hint;
  codec_state *state = data;
  napi_delete_reference(env, state->object_prototype);
  napi_delete_reference(env, state->array_prototype);
  napi_delete_reference(env, state->uint8array_prototype);
  napi_delete_reference(env, state->buffer_prototype);
  free(state->scratch);
  free(state->units);
  free(state);
}

/* `globalThis[name].prototype`, held by a reference: captured once, so later changes to the globals change nothing. */
static napi_value prototype_of(napi_env env, napi_value global, const char *name, napi_ref *out) {
  napi_value constructor, prototype;
  CHECK(env, napi_get_named_property(env, global, name, &constructor));
  CHECK(env, napi_get_named_property(env, constructor, "prototype", &prototype));
  CHECK(env, napi_create_reference(env, prototype, 1, out));
  return prototype;
}

NAPI_MODULE_INIT() {
  codec_state *state = calloc(1, sizeof *state);
  if (state == NULL || (state->scratch = malloc(SCRATCH_BYTES)) == NULL) {
    free(state);
    napi_throw_error(env, "ERR_STRATA_WIRE_MEMORY", "strata_wire: out of memory");
    return NULL;
  }
  state->capacity = SCRATCH_BYTES;
  napi_value global;
  CHECK(env, napi_get_global(env, &global));
  if (prototype_of(env, global, "Object", &state->object_prototype) == NULL || prototype_of(env, global, "Array", &state->array_prototype) == NULL ||
      prototype_of(env, global, "Uint8Array", &state->uint8array_prototype) == NULL || prototype_of(env, global, "Buffer", &state->buffer_prototype) == NULL)
    return NULL;
  CHECK(env, napi_set_instance_data(env, state, free_state, NULL));
  napi_property_descriptor properties[] = {
      {"encodeFrame", NULL, encode_frame, NULL, NULL, NULL, napi_enumerable, NULL},
      {"decodeBody", NULL, decode_body, NULL, NULL, NULL, napi_enumerable, NULL},
      {"decodeFrames", NULL, decode_frames, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  CHECK(env, napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties));
  return exports;
}
