// KeepsakeAge: age v1 (age-encryption.org/v1): X25519 recipients and identities, scrypt
// passphrases with a work-factor cap, armor, the STREAM payload written in order and read at
// any offset; and the primitives under it (X25519, ChaCha20-Poly1305, HKDF, scrypt, Bech32,
// secret bytes, secure randomness). Knows nothing of storage or backups.
//
// Imports KeepsakeSupport, KeepsakeHashing and CCrypto only. docs/architecture.md draws the
// whole graph.
