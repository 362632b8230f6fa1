// Entry of the crypto bundle (scripts/bundle.mjs): the hash functions behind
// crypto.subtle.digest, returned to the installer in src/bootstrap/crypto.ts.
import { sha1 } from '@noble/hashes/legacy.js';
import { sha256, sha384, sha512 } from '@noble/hashes/sha2.js';

export { sha1, sha256, sha384, sha512 };
