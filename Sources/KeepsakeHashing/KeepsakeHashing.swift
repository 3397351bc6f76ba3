// KeepsakeHashing: SHA-256 (`SHA256Hasher`, OpenSSL's EVP, which uses the CPU's SHA
// extensions), HMAC-SHA256, and byte streams hashed as they pass (`HashingSink`, `HashingSource`).
//
// Imports KeepsakeSupport and CCrypto only. docs/architecture.md draws the whole graph.
