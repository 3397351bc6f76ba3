// KeepsakeEncryption: encrypted backups as a reader meets them. The keys a command was given
// (`AgeKeyring`: identities, a passphrase asked for at most once), a store read with them
// (`KeyedStorage`: age files open as their plaintext, front to back or at any offset; a
// header that will not open with a key it was made for is damage, not a wrong key), and
// `EncryptionError`, which names the key to give, never a secret.
//
// Imports KeepsakeSupport, KeepsakeAge, KeepsakeArchive (damage), KeepsakeModel (backup
// names, summaries) and KeepsakeStorage only: never the engine, the configuration or the
// terminal. Writing encrypted backups is the engine's (it encrypts what it stores itself).
