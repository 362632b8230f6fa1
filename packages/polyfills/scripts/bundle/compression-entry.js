// Entry of the compression bundle (scripts/bundle.mjs): fflate's synchronous streaming classes,
// used by src/bootstrap/compression.ts. Decompression uses raw Inflate for all three formats; the
// installer reads the gzip and zlib wrappers itself (and checks their CRC-32 / Adler-32).
export { Deflate, Gzip, Zlib, Inflate } from 'fflate';
