// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Keepsake",
    products: [
        .executable(name: "keepsake", targets: ["keepsake"]),
    ],
    targets: [
        // MARK: C libraries from Debian's -dev packages
        .systemLibrary(
            name: "CArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),

        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),

        // HTTP for S3-compatible object storage.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),

        // GNU/Linux calls (xattrs, SEEK_DATA, O_NOATIME) that Glibc's Swift module lacks.
        .systemLibrary(name: "CPosix"),

        // MARK: Layers (docs/architecture.md draws the graph; a target imports only what it lists)
        // Bytes, paths, locks, cancellation, processes: no format, no storage, no backups.
        .target(name: "KeepsakeSupport", dependencies: ["CPosix"]),
        // JSON values, a bounded parser and a writer: knows nothing of what the JSON means.
        .target(name: "KeepsakeJSON", dependencies: ["KeepsakeSupport"]),
        // SHA-256 and HMAC-SHA256 through OpenSSL.
        .target(name: "KeepsakeHashing", dependencies: ["CCrypto", "KeepsakeSupport"]),
        // age v1 (X25519 recipients, scrypt passphrases, armor) and the primitives under it.
        .target(name: "KeepsakeAge", dependencies: ["CCrypto", "KeepsakeSupport", "KeepsakeHashing"]),
        // An HTTP/1.1 client over libcurl (requests, responses, bounded bodies): knows no S3.
        .target(name: "KeepsakeHTTP", dependencies: ["CCurl"]),
        // tar as Keepsake writes and reads it, and seekable zstd: entries, not backups.
        .target(name: "KeepsakeArchive", dependencies: ["CArchive", "CZstd", "KeepsakeSupport"]),
        // What a backup is, as data: ids, names, summary, manifest, retention.
        .target(name: "KeepsakeModel", dependencies: ["KeepsakeSupport", "KeepsakeJSON", "KeepsakeArchive"]),
        // Where backups live: the store protocols, the lock, a local folder, a lone archive's folder.
        .target(name: "KeepsakeStorage", dependencies: ["CPosix", "KeepsakeSupport", "KeepsakeJSON", "KeepsakeHashing",
                                                        "KeepsakeModel"]),
        // S3-compatible object storage as a store: SigV4, the XML, the lock by conditional writes.
        .target(name: "KeepsakeS3", dependencies: ["KeepsakeSupport", "KeepsakeJSON", "KeepsakeHashing", "KeepsakeHTTP",
                                                   "KeepsakeModel", "KeepsakeStorage"]),
        // rclone remotes as a store: a child process per call.
        .target(name: "KeepsakeRclone", dependencies: ["CPosix", "KeepsakeSupport", "KeepsakeJSON", "KeepsakeStorage"]),
        // What a backup reads, found: the scanner and the exclude rules; reads no content.
        .target(name: "KeepsakeScan", dependencies: ["CPosix", "KeepsakeSupport", "KeepsakeArchive", "KeepsakeModel"]),
        // Encrypted backups as a reader meets them: the keyring, a store read with it.
        .target(name: "KeepsakeEncryption", dependencies: ["KeepsakeSupport", "KeepsakeAge", "KeepsakeArchive", "KeepsakeModel",
                                                           "KeepsakeStorage"]),
        // Backups that prove who wrote them: Ed25519 keys, statements, signatures, the check.
        .target(name: "KeepsakeSigning", dependencies: ["CCrypto", "KeepsakeSupport", "KeepsakeJSON", "KeepsakeAge",
                                                        "KeepsakeModel", "KeepsakeStorage"]),
        // The engine: names no S3, rclone or HTTP type (the CLI alone picks a store).
        .target(
            name: "BackupCore",
            dependencies: ["CCrypto", "CPosix", "KeepsakeSupport", "KeepsakeJSON", "KeepsakeHashing",
                           "KeepsakeAge", "KeepsakeArchive", "KeepsakeModel", "KeepsakeStorage", "KeepsakeScan",
                           "KeepsakeEncryption", "KeepsakeSigning"]
        ),
        // The subset of TOML config.toml uses, read strictly: values only.
        .target(name: "KeepsakeTOML", dependencies: ["KeepsakeSupport"]),
        // Configuration files (profiles): turns a profile into BackupCore's plain requests.
        .target(
            name: "KeepsakeConfig",
            dependencies: ["BackupCore", "KeepsakeSupport", "KeepsakeAge", "KeepsakeArchive", "KeepsakeModel", "KeepsakeStorage",
                           "KeepsakeS3", "KeepsakeScan", "KeepsakeEncryption", "KeepsakeSigning", "KeepsakeTOML"]
        ),
        .target(name: "TerminalUI"),
        .target(
            name: "KeepsakeCLI",
            dependencies: ["BackupCore", "KeepsakeConfig", "KeepsakeSupport", "KeepsakeJSON", "KeepsakeAge", "KeepsakeArchive",
                           "KeepsakeModel", "KeepsakeStorage", "KeepsakeS3", "KeepsakeRclone", "KeepsakeScan", "KeepsakeEncryption",
                           "KeepsakeSigning", "TerminalUI"]
        ),
        .executableTarget(
            name: "keepsake",
            dependencies: ["KeepsakeCLI"]
        ),

        // MARK: Tests
        // The base class of every test case (a skip under CI=true must be allow-listed).
        .target(name: "KeepsakeTestSupport", dependencies: ["BackupCore", "KeepsakeSupport", "TerminalUI"], path: "Tests/KeepsakeTestSupport",
                exclude: ["Servers/fault_proxy.py"]),
        .testTarget(name: "BackupCoreTests", dependencies: ["BackupCore", "CArchive", "KeepsakeSupport", "KeepsakeJSON", "KeepsakeHashing", "KeepsakeHTTP",
                                                        "KeepsakeAge", "KeepsakeArchive", "KeepsakeModel", "KeepsakeStorage", "KeepsakeS3",
                                                        "KeepsakeRclone", "KeepsakeScan", "KeepsakeEncryption",
                                                        "KeepsakeSigning", "KeepsakeTestSupport"],
                    exclude: ["Fixtures"]),
        .testTarget(name: "KeepsakeConfigTests", dependencies: ["KeepsakeConfig", "KeepsakeTOML", "KeepsakeAge", "KeepsakeModel", "KeepsakeStorage",
                                                            "KeepsakeS3", "KeepsakeScan", "KeepsakeEncryption", "KeepsakeSigning",
                                                            "KeepsakeTestSupport"]),
        .testTarget(name: "TerminalUITests", dependencies: ["TerminalUI", "KeepsakeTestSupport"]),
        // Screens/: the help screens the tests compare with, recorded as files.
        .testTarget(name: "KeepsakeCLITests", dependencies: ["KeepsakeCLI", "KeepsakeConfig", "KeepsakeModel", "KeepsakeSupport", "TerminalUI",
                                                         "KeepsakeEncryption", "KeepsakeSigning",
                                                         "KeepsakeTestSupport"],
                    exclude: ["Screens"]),
        .testTarget(name: "EndToEndTests", dependencies: ["keepsake", "KeepsakeSupport", "KeepsakeTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
