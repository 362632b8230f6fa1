/**
 * The size of a transferable value in CBOR, as the wire sends it, computed without encoding.
 * Stops counting once past `cap`, so a huge result costs no more than the cap to measure.
 * Headers are counted at their exact CBOR width; tags for Set, Map, Date and bigint at 3 bytes.
 */
export function encodedSize(value: unknown, cap: number): number {
  let total = 0;
  const header = (n: number) => (n < 24 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < 0x100000000 ? 5 : 9);
  const stack: unknown[] = [value];
  while (stack.length > 0 && total <= cap) {
    const v = stack.pop();
    switch (typeof v) {
      case 'undefined':
      case 'boolean':
        total += 1;
        continue;
      case 'number':
        total += Number.isInteger(v) && Math.abs(v) < 2 ** 53 ? header(Math.abs(v)) : 9;
        continue;
      case 'bigint':
        total += 3 + Math.ceil(v.toString(16).length / 2);
        continue;
      case 'string': {
        // UTF-8 length without allocating: at most 3 bytes per UTF-16 unit.
        const bytes = v.length * 3 < 1024 ? Buffer.byteLength(v) : v.length > cap ? v.length : Buffer.byteLength(v);
        total += header(bytes) + bytes;
        continue;
      }
    }
    if (v === null) {
      total += 1;
    } else if (v instanceof Uint8Array) {
      total += header(v.byteLength) + v.byteLength;
    } else if (v instanceof Date) {
      total += 3 + 9;
    } else if (Array.isArray(v)) {
      total += header(v.length);
      for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    } else if (v instanceof Map) {
      total += 3 + header(v.size);
      for (const [k, val] of v) stack.push(k, val);
    } else if (v instanceof Set) {
      total += 3 + header(v.size);
      for (const element of v) stack.push(element);
    } else {
      const entries = Object.entries(v as object);
      total += header(entries.length);
      for (const [k, val] of entries) stack.push(k, val);
    }
  }
  return total;
}
