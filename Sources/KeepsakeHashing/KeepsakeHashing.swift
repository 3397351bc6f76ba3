// KeepsakeHashing: SHA-256 (`SHA256Hasher`, OpenSSL's EVP, which uses the CPU's SHA
// extensions) and HMAC-SHA256.
//
// Imports KeepsakeSupport and CCrypto only. docs/architecture.md draws the whole graph.
