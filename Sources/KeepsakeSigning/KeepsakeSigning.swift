// KeepsakeSigning: backups that prove who wrote them. Ed25519 through OpenSSL, the key
// files (`SigningKey`, `SigningPublicKey`, PEM), the statement a backup host signs (every
// object of a backup with its size and SHA-256: `SignedStatement`), the signature object
// stored beside a backup (`BackupSignature`) and the check a restoring side makes before it
// reads anything (`SignatureCheck`, on the objects as stored), with `SigningError`.
//
// Imports KeepsakeSupport, KeepsakeJSON, KeepsakeAge (secret bytes), KeepsakeModel (backup
// names, summaries) and KeepsakeStorage (the objects it checks) only: never the engine's
// catalog, the configuration or the terminal. docs/formats.md describes the signature.
