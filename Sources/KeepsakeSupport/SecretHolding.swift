import CPosix

/// Keeps what this process holds out of core dumps and away from other processes of the
/// same user (ptrace, `/proc/PID/mem`) once it holds a secret: S3 keys, an age identity, a
/// passphrase. A crash of a cron job must not leave the bucket's secret in a core file.
public enum SecretHolding {
    // MARK: Marking

    /// Called as a secret is read: from then on the process cannot be dumped. (It stays so:
    /// the secret stays in memory until the process ends.)
    public static func begin() {
        _ = ks_set_dumpable(0)
    }

    /// Whether the process may still be dumped.
    public static var isDumpable: Bool { ks_get_dumpable() == 1 }
}
