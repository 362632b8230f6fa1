// Entry of the crypto bundle (scripts/bundle.mjs): the hash functions behind
// crypto.subtle.digest, and HMAC over them for sign/verify, returned to the installer in
// src/bootstrap/crypto.ts.
import { hmac } from '@noble/hashes/hmac.js';
import { sha1 } from '@noble/hashes/legacy.js';
import { sha256, sha384, sha512 } from '@noble/hashes/sha2.js';

export { hmac, sha1, sha256, sha384, sha512 };
