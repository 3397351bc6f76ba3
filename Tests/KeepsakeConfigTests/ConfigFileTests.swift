import BackupCore
import Foundation
import KeepsakeAge
import KeepsakeConfig
import KeepsakeModel
import KeepsakeS3
import KeepsakeStorage
import KeepsakeTestSupport
import XCTest

/// The configuration file: valid profiles become backup requests, and every problem is
/// reported with the file, line and column.
final class ConfigFileTests: KeepsakeTestCase {
    // MARK: Helpers

    private let file = "/etc/keepsake/config.toml"
    private let home = "/home/ana"

    private func load(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> ConfigFile {
        try ConfigFile(text: text, path: self.file, home: home)
    }

    /// Asserts that `text` is rejected with exactly `expected` as the error's description.
    private func assertProblems(_ text: String, _ expected: [String], kind: ConfigError.Kind? = nil,
                                file: StaticString = #filePath, line: UInt = #line) {
        do {
            let config = try ConfigFile(text: text, path: self.file, home: home)
            XCTFail("expected an error but loaded \(config.profileNames)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.description, expected.joined(separator: "\n"), file: file, line: line)
            if let kind { XCTAssertEqual(error.kind, kind, file: file, line: line) }
        }
    }

    private func assertProblem(_ text: String, _ expected: String, kind: ConfigError.Kind? = nil,
                               file: StaticString = #filePath, line: UInt = #line) {
        assertProblems(text, [expected], kind: kind, file: file, line: line)
    }

    // MARK: Valid files

    func testFullProfileBecomesRequestChainAndRetention() throws {
        let config = try load("""
            # Nightly backups.
            [profiles.home]
            sources = ["/home/ana", "~/notes", "projects"]
            destination = "/mnt/usb/backups"
            exclude = ["*.tmp", "node_modules/"]
            exclude-caches = true
            exclude-if-present = [".nobackup"]
            one-file-system = true
            compression = "xz"
            level = 9
            threads = 2
            readers = 8
            tags = ["home", "nightly", "home"]
            full-every = 10
            full-if-older-than = "2w"
            ignore-ctime = true
            ignore-inode = true
            reread = false
            blocks = true
            before = "pg_dump shop > /var/backups/shop.sql"
            after = "curl -fsS https://hc.example/ping"

            [profiles.home.retention]
            keep-last = 3
            keep-hourly = 24
            keep-daily = 7
            keep-weekly = 4
            keep-monthly = 12
            keep-yearly = "unlimited"
            keep-within = "2d"
            keep-tag = ["keep", "db,monthly"]
            keep-chains = true

            [profiles.db]
            sources = ["/var/backups"]
            [profiles.db.retention]
            keep-last = 1
            """)
        XCTAssertEqual(config.profileNames, ["home", "db"])
        let profile = try config.profile(named: "home")
        XCTAssertEqual(profile.sources, ["/home/ana", "/home/ana/notes", "/etc/keepsake/projects"])
        XCTAssertEqual(profile.destination, "/mnt/usb/backups")
        XCTAssertEqual(profile.before, "pg_dump shop > /var/backups/shop.sql")
        XCTAssertEqual(profile.after, "curl -fsS https://hc.example/ping")
        XCTAssertEqual(profile.retention, RetentionPolicy(keepLast: 3, keepHourly: 24, keepDaily: 7, keepWeekly: 4,
                                                          keepMonthly: 12, keepYearly: RetentionPolicy.unlimited,
                                                          keepWithin: DurationSpec(days: 2),
                                                          keepTags: [["keep"], ["db", "monthly"]]))
        XCTAssertTrue(profile.keepsChains)
        XCTAssertFalse(try config.profile(named: "db").keepsChains, "prune consolidates unless keep-chains says otherwise")

        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let request = try profile.backupRequest(toolVersion: "keepsake 9", defaultThreads: 8, now: now)
        XCTAssertEqual(request.sources, profile.sources)
        XCTAssertNil(request.stdinName)
        XCTAssertEqual(request.compression, .xz)
        XCTAssertEqual(request.level, 9)
        XCTAssertEqual(request.threads, 2)
        XCTAssertEqual(request.readers, 8)
        XCTAssertEqual(request.tags, ["home", "nightly"])
        XCTAssertEqual(request.chain, ChainPolicy(fullEvery: 10, fullIfOlderThan: DurationSpec(days: 14),
                                                  ignoreCtime: true, ignoreInode: true, storesBlocks: true))
        XCTAssertFalse(request.dryRun)
        XCTAssertEqual(request.toolVersion, "keepsake 9")
        XCTAssertEqual(request.now, now)
        XCTAssertTrue(request.scan.excludeCaches)
        XCTAssertTrue(request.scan.oneFileSystem)
        XCTAssertEqual(request.scan.excludeIfPresent, [".nobackup"])
        XCTAssertEqual(request.scan.excludes.count, 2)
        XCTAssertTrue(request.scan.excludes.isExcluded(relativePath: Array("a/b.tmp".utf8),
                                                       absolutePath: Array("/home/ana/a/b.tmp".utf8), isDirectory: false))
        XCTAssertTrue(request.scan.excludes.isExcluded(relativePath: Array("x/node_modules".utf8),
                                                       absolutePath: Array("/home/ana/x/node_modules".utf8), isDirectory: true))
    }

    func testMinimalProfileGetsTheDefaultsOfBackup() throws {
        let profile = try load("[profiles.home]\nsources = [\"/home/ana\"]\n").profile(named: "home")
        XCTAssertEqual(profile, Profile(name: "home", file: file, sources: ["/home/ana"]))
        XCTAssertNil(profile.retention)
        XCTAssertNil(profile.destination)
        let request = try profile.backupRequest(toolVersion: "keepsake 9", defaultThreads: 3)
        XCTAssertEqual(request.compression, .zstd)
        XCTAssertNil(request.level)
        XCTAssertEqual(request.threads, 3)
        XCTAssertEqual(request.chain, ChainPolicy())
        XCTAssertTrue(request.scan.excludes.isEmpty)
        XCTAssertFalse(request.scan.excludeCaches)
    }

    /// Destinations off the machine and further copies, and the S3 settings a profile may hold.
    func testRemoteDestinationsCopiesAndS3Settings() throws {
        let profile = try load("""
            [profiles.fleet]
            sources = ["/srv"]
            destination = "s3://backups/hosts/web"
            copy-to = ["usb-copy", "rclone:nas:keepsake", "~/third"]
            lock-wait = "15min"
            s3-endpoint = "http://127.0.0.1:8333"
            s3-region = "eu-west-3"
            aws-profile = "backup"
            aws-access-key-id = "AKIDPROFILE"
            aws-secret-access-key = "secret-in-the-file"
            """).profile(named: "fleet")
        XCTAssertEqual(profile.destination, "s3://backups/hosts/web")
        XCTAssertEqual(profile.copyTo, ["/etc/keepsake/usb-copy", "rclone:nas:keepsake", "/home/ana/third"],
                       "relative folders from the file's folder, as other paths")
        XCTAssertEqual(profile.s3, S3Configuration.Overrides(endpoint: "http://127.0.0.1:8333", region: "eu-west-3", awsProfile: "backup",
                                                             accessKeyID: "AKIDPROFILE", secretAccessKey: "secret-in-the-file"))
        XCTAssertEqual(profile.lockWait, 900)
        XCTAssertEqual(try profile.backupRequest(toolVersion: "t", defaultThreads: 1).lockWait, 900)
        XCTAssertEqual(try load("[profiles.p]\nsources = [\"/a\"]\ndestination = \"relative\"\n").profile(named: "p").destination,
                       "/etc/keepsake/relative")
    }

    func testDestinationsThatAreNoKnownFormAreRefusedWhereTheyAreWritten() {
        assertProblems("""
            [profiles.p]
            sources = ["/a"]
            destination = "s3:/backups/x"
            copy-to = ["gs://bucket", "s3://backups/x"]
            aws-access-key-id = "AKID"
            """, [
                "/etc/keepsake/config.toml:3:1: 'destination' is not a destination: an S3 destination is written "
                    + "s3://BUCKET/PREFIX; did you mean 's3://backups/x'? (a folder, s3://BUCKET/PREFIX or rclone:REMOTE:PATH)",
                "/etc/keepsake/config.toml:4:1: 'copy-to' is not a destination: Keepsake does not speak 'gs://'; reach it "
                    + "through an rclone remote (rclone:REMOTE:PATH, see 'rclone config') (a folder, s3://BUCKET/PREFIX or rclone:REMOTE:PATH)",
                "/etc/keepsake/config.toml:5:1: give both 'aws-access-key-id' and 'aws-secret-access-key', or neither",
            ])
    }

    func testDottedAndInlineRetentionAndEmptyFile() throws {
        let dotted = try load("""
            [profiles.a]
            sources = ["/a"]
            retention.keep-last = 2
            [profiles.b]
            sources = ["/b"]
            retention = { keep-daily = 5, keep-last = 0 }
            """)
        XCTAssertEqual(try dotted.profile(named: "a").retention, RetentionPolicy(keepLast: 2))
        XCTAssertEqual(try dotted.profile(named: "b").retention, RetentionPolicy(keepLast: 0, keepDaily: 5))
        XCTAssertEqual(try load("# nothing yet\n").profiles, [])
    }

    func testExcludeFromFilesAreReadWhenTheRequestIsMade() throws {
        let scratch = try ScratchDirectory.make("config")
        defer { ScratchDirectory.remove(scratch) }
        let folder = scratch.path
        try "# comment\n*.log\n\n/build\n".write(toFile: folder + "/ignore", atomically: false, encoding: .utf8)
        let config = try ConfigFile(text: """
            [profiles.home]
            sources = ["/home/ana"]
            exclude = ["*.tmp"]
            exclude-from = ["ignore", "missing"]
            """, path: folder + "/config.toml", home: home)
        let profile = try config.profile(named: "home")
        XCTAssertEqual(profile.excludeFrom, [folder + "/ignore", folder + "/missing"])
        XCTAssertThrowsError(try profile.backupRequest(toolVersion: "k", defaultThreads: 1)) { error in
            XCTAssertEqual("\(error)", "\(folder)/config.toml:4:1: cannot read the exclude file '\(folder)/missing' named in "
                + "'exclude-from' of profile 'home': No such file or directory")
        }
        var readable = profile
        readable.excludeFrom = [folder + "/ignore"]
        XCTAssertEqual(try readable.excludePatterns(), ["*.tmp", "*.log", "/build"])
        XCTAssertEqual(try readable.backupRequest(toolVersion: "k", defaultThreads: 1).scan.excludes.count, 3)

        try "[a-\n".write(toFile: folder + "/bad", atomically: false, encoding: .utf8)
        readable.excludeFrom = [folder + "/bad"]
        XCTAssertThrowsError(try readable.backupRequest(toolVersion: "k", defaultThreads: 1)) { error in
            XCTAssertEqual("\(error)", "\(folder)/config.toml:4:1: the exclude file '\(folder)/bad' named in 'exclude-from' "
                + "of profile 'home' holds an invalid pattern '[a-': unterminated '[' (a character class needs a closing ']')")
        }
    }

    // MARK: Encryption settings

    func testProfilesTakeEncryptionSettings() throws {
        let identity = try AgeIdentity.generate()
        let config = try ConfigFile(text: """
            [profiles.web]
            sources = ["/srv"]
            recipients = ["\(identity.recipient.encoded)"]
            recipients-file = "keys.txt"
            identity-file = ["~/key.txt"]
            """, path: "/etc/keepsake/config.toml", home: "/home/ana")
        let profile = try config.profile(named: "web")
        XCTAssertEqual(profile.encryption.recipients, [identity.recipient])
        XCTAssertEqual(profile.encryption.recipientsFiles, ["/etc/keepsake/keys.txt"])
        XCTAssertEqual(profile.encryption.identityFiles, ["/home/ana/key.txt"])
        XCTAssertTrue(profile.encryption.encrypts)
    }

    func testBadEncryptionSettingsAreNamedAtTheirLine() {
        XCTAssertThrowsError(try ConfigFile(text: "[profiles.web]\nsources = [\"/srv\"]\nrecipients = [\"AGE-SECRET-KEY-1XYZ\"]\n",
                                            path: "/c.toml", home: "/h")) { error in
            XCTAssertTrue("\(error)".contains("/c.toml:3:"), "\(error)")
            XCTAssertTrue("\(error)".contains("where its public key belongs"), "\(error)")
            XCTAssertFalse("\(error)".contains("AGE-SECRET-KEY-1XYZ"), "a secret key is echoed: \(error)")
        }
        XCTAssertThrowsError(try ConfigFile(text: "[profiles.web]\nsources = [\"/srv\"]\nrecipients-file = \"k\"\npassphrase-file = \"p\"\n",
                                            path: "/c.toml", home: "/h")) { error in
            XCTAssertTrue("\(error)".contains("not both"), "\(error)")
        }
    }

    // MARK: Locating and loading

    func testDefaultPathFollowsXDG() {
        XCTAssertEqual(ConfigFile.defaultPath(environment: ["HOME": "/home/ana"]), "/home/ana/.config/keepsake/config.toml")
        XCTAssertEqual(ConfigFile.defaultPath(environment: ["HOME": "/home/ana", "XDG_CONFIG_HOME": "/cfg"]),
                       "/cfg/keepsake/config.toml")
        XCTAssertEqual(ConfigFile.defaultPath(environment: ["HOME": "/home/ana", "XDG_CONFIG_HOME": "relative"]),
                       "/home/ana/.config/keepsake/config.toml")
    }

    func testMissingFileSaysHowToCreateOne() throws {
        let scratch = try ScratchDirectory.make("config")
        defer { ScratchDirectory.remove(scratch) }
        let folder = scratch.path
        XCTAssertThrowsError(try ConfigFile.load(path: nil, environment: ["HOME": folder])) { error in
            XCTAssertEqual((error as? ConfigError)?.kind, .fileMissing)
            XCTAssertEqual("\(error)", """
                No configuration file at \(folder)/.config/keepsake/config.toml; create it with a profile like this one \
                (docs/configuration.md describes every key):

                [profiles.home]
                sources = ["\(folder)"]

                then run 'keepsake run home'
                """)
        }
        XCTAssertThrowsError(try ConfigFile.load(path: folder + "/other.toml", environment: ["HOME": folder])) { error in
            XCTAssertTrue("\(error)".hasPrefix("No configuration file at \(folder)/other.toml; create it"), "\(error)")
            XCTAssertTrue("\(error)".hasSuffix("then run 'keepsake run home --config \(folder)/other.toml'"), "\(error)")
        }
        XCTAssertThrowsError(try ConfigFile.load(path: folder, environment: ["HOME": folder])) { error in
            XCTAssertEqual("\(error)", "The configuration file \(folder) is a folder; give a file")
        }
        let configFolder = try ScratchDirectory.subdirectory(".config/keepsake", of: scratch)
        try "[profiles.x]\nsources = [\"/x\"]\n".write(toFile: configFolder.path + "/config.toml", atomically: false,
                                                         encoding: .utf8)
        let loaded = try ConfigFile.load(path: nil, environment: ["HOME": folder])
        XCTAssertEqual(loaded.path, folder + "/.config/keepsake/config.toml")
        XCTAssertEqual(loaded.profileNames, ["x"])
    }

    func testMissingProfileNamesTheFileAndTheProfiles() throws {
        let config = try load("[profiles.home]\nsources = [\"/a\"]\n[profiles.db]\nsources = [\"/b\"]\n")
        XCTAssertThrowsError(try config.profile(named: "hme")) { error in
            XCTAssertEqual((error as? ConfigError)?.kind, .profileNotFound)
            XCTAssertEqual("\(error)", "no profile 'hme' in \(file); profiles: home, db; did you mean 'home'?")
        }
        XCTAssertThrowsError(try config.profile(named: "laptop")) { error in
            XCTAssertEqual("\(error)", "no profile 'laptop' in \(file); profiles: home, db")
        }
        XCTAssertThrowsError(try load("").profile(named: "home")) { error in
            XCTAssertEqual("\(error)", "no profile 'home' in \(file); it defines no profiles (add a [profiles.home] table)")
        }
    }

    // MARK: Syntax errors

    func testSyntaxErrorsCarryFileLineAndColumn() {
        assertProblem("[profiles.home]\nsources = [\"/a\"\n", "\(file):2:11: unterminated array: no closing ']'",
                      kind: .syntax)
        assertProblem("[profiles.home]\nsources = [\"/a\"]\nlevel 3\n", "\(file):3:7: expected '=' after key 'level', found '3'",
                      kind: .syntax)
        assertProblem("[profiles.home]\nsources = [\"/a\"]\nsources = [\"/b\"]\n",
                      "\(file):3:1: duplicate key 'sources' (first defined at line 2, column 1)", kind: .syntax)
    }

    // MARK: Unknown keys

    /// A profile's s3-endpoint and host are checked as --s3-endpoint and --host are.
    func testAMalformedEndpointOrHostIsAnErrorAtItsLine() {
        assertProblems("""
            [profiles.home]
            sources = ["/a"]
            s3-endpoint = "localhost:9000"
            host = "web 1"
            """, [
                "\(file):3:1: 's3-endpoint' is not usable: it does not start with http:// or https://; give an http:// or https:// "
                    + "URL of a host, like http://127.0.0.1:8333",
                "\(file):4:1: 'host': 'web 1' is not a host name Keepsake can use: give letters, digits, '-' and '.' (at most 64)",
            ], kind: .invalidValue)
    }

    func testUnknownKeysWithSuggestions() {
        assertProblem("""
            [profiles.home]
            sources = ["/a"]
            exlude = ["*.tmp"]
            """, "\(file):3:1: unknown key 'exlude' in profile 'home'; did you mean 'exclude'?", kind: .unknownKey)
        assertProblem("""
            [profiles.home]
            sources = ["/a"]
              compresion = "xz"
            """, "\(file):3:3: unknown key 'compresion' in profile 'home'; did you mean 'compression'?")
        assertProblem("""
            [profile.home]
            sources = ["/a"]
            """, "\(file):1:1: unknown key 'profile' at the top level (the file holds [profiles.NAME] tables); did you mean 'profiles'?")
        assertProblem("""
            [profiles.home]
            sources = ["/a"]
            [profiles.home.retention]
            keep-dayly = 7
            """, "\(file):4:1: unknown key 'keep-dayly' in the retention of profile 'home'; did you mean 'keep-daily'?")
        assertProblem("""
            [profiles.home]
            sources = ["/a"]
            colour = "blue"
            """, "\(file):3:1: unknown key 'colour' in profile 'home'; known keys: sources, destination, exclude, exclude-from, "
                + "exclude-caches, exclude-if-present, one-file-system, compression, level, threads, readers, tags, full-every, "
                + "full-if-older-than, ignore-ctime, ignore-inode, reread, blocks, before, after, retention, copy-to, lock-wait, s3-endpoint, "
                + "s3-region, aws-profile, aws-access-key-id, aws-secret-access-key, aws-session-token, recipients, recipients-file, passphrase-file, identity-file, host, signing-key, signed-by")
    }

    // MARK: Wrong types

    func testWrongTypes() {
        let header = "[profiles.home]\nsources = [\"/a\"]\n"
        assertProblem(header + "level = \"3\"\n", "\(file):3:1: 'level' must be a whole number, not a string", kind: .wrongType)
        assertProblem(header + "level = 3.0\n", "\(file):3:1: 'level' must be a whole number, not a float")
        assertProblem(header + "exclude-caches = \"yes\"\n", "\(file):3:1: 'exclude-caches' must be true or false, not a string")
        assertProblem(header + "destination = [\"/b\"]\n", "\(file):3:1: 'destination' must be a string, not an array")
        assertProblem(header + "tags = \"home\"\n",
                      "\(file):3:1: 'tags' must be an array of strings, not a string (write tags = [\"home\"])")
        assertProblem(header + "exclude = [\"*.tmp\", 3]\n",
                      "\(file):3:1: 'exclude' must be an array of strings; element 2 is an integer")
        assertProblem(header + "full-every = true\n", "\(file):3:1: 'full-every' must be a whole number, not a boolean")
        assertProblem(header + "retention = 3\n",
                      "\(file):3:1: 'retention' must be a table ([profiles.home.retention] with keep-* keys), not an integer")
        assertProblem(header + "[profiles.home.retention]\nkeep-last = 2.5\n",
                      "\(file):4:1: 'keep-last' must be a whole number of 0 or more, or -1 or \"unlimited\", not a float")
        assertProblem(header + "[profiles.home.retention]\nkeep-last = 2\nkeep-chains = \"yes\"\n",
                      "\(file):5:1: 'keep-chains' must be true or false, not a string")
        assertProblem(header + "[profiles.home.retention]\nkeep-chains = true\n",
                      "\(file):3:1: the retention of profile 'home' has no rule; give keep-last, keep-hourly, keep-daily, keep-weekly, "
                        + "keep-monthly, keep-yearly, keep-within or keep-tag (or remove it to keep every backup)")
        assertProblem("profiles = 1\n", "\(file):1:1: 'profiles' must be a table of profiles ([profiles.NAME]), not an integer")
        assertProblem("[profiles]\nhome = \"/a\"\n",
                      "\(file):2:1: profile 'home' must be a table ([profiles.home] with its keys below it), not a string")
    }

    // MARK: Invalid values

    func testInvalidValues() {
        let header = "[profiles.home]\nsources = [\"/a\"]\n"
        assertProblem(header + "compression = \"zstdd\"\n",
                      "\(file):3:1: unknown compression 'zstdd'; use zstd, gzip, xz, lz4 or none (did you mean 'zstd'?)",
                      kind: .invalidValue)
        assertProblem(header + "compression = \"brotli\"\n", "\(file):3:1: unknown compression 'brotli'; use zstd, gzip, xz, lz4 or none")
        assertProblem(header + "level = 20\n", "\(file):3:1: 'level' 20 is out of range for zstd; use 1 to 19")
        assertProblem(header + "compression = \"gzip\"\nlevel = 0\n", "\(file):4:1: 'level' 0 is out of range for gzip; use 1 to 9")
        assertProblem(header + "compression = \"none\"\nlevel = 1\n", "\(file):4:1: 'level' does not apply to compression 'none'; remove it")
        assertProblem(header + "threads = 0\n", "\(file):3:1: 'threads' must be from 1 to 256, not 0")
        assertProblem(header + "readers = 65\n", "\(file):3:1: 'readers' must be from 1 to 64, not 65")
        assertProblem(header + "full-every = 0\n", "\(file):3:1: 'full-every' must be from 1 to 1000000, not 0")
        assertProblem(header + "full-if-older-than = \"7x\"\n",
                      "\(file):3:1: 'full-if-older-than': '7x' is not a duration: unknown unit 'x'; use y, m, w, d or h (e.g. 7d, 2w, 1y6m)")
        assertProblem(header + "exclude = [\"[a-\"]\n",
                      "\(file):3:1: 'exclude' holds an invalid pattern '[a-': unterminated '[' (a character class needs a closing ']')")
        assertProblem(header + "exclude-if-present = [\"a/b\"]\n",
                      "\(file):3:1: 'exclude-if-present' takes file names, not paths or empty names: 'a/b'")
        assertProblem(header + "tags = [\"a,b\"]\n",
                      "\(file):3:1: 'tags' holds an invalid tag 'a,b': tags are non-empty and hold no commas or newlines")
        assertProblem(header + "destination = \"\"\n", "\(file):3:1: 'destination' is empty; give a folder, s3://BUCKET/PREFIX or rclone:REMOTE:PATH, or remove the key")
        assertProblem(header + "before = \"  \"\n", "\(file):3:1: 'before' is empty; give a shell command or remove the key")
        assertProblem(header + "[profiles.home.retention]\nkeep-daily = -2\n",
                      "\(file):4:1: 'keep-daily' must be a whole number of 0 or more, or -1 or \"unlimited\", not -2")
        assertProblem(header + "[profiles.home.retention]\nkeep-daily = \"all\"\n",
                      "\(file):4:1: 'keep-daily' must be a whole number of 0 or more, or -1 or \"unlimited\", not \"all\"")
        assertProblem(header + "[profiles.home.retention]\nkeep-within = \"0d\"\n",
                      "\(file):4:1: 'keep-within': '0d' is not a duration: it is zero; give a length of at least 1h (e.g. 7d, 2w, 1y6m)")
        assertProblem(header + "[profiles.home.retention]\nkeep-tag = [\"a,\"]\n",
                      "\(file):4:1: 'keep-tag' holds 'a,' with an empty tag; write \"a,b\" for backups with both tags a and b")
        assertProblem(header + "[profiles.home.retention]\nkeep-last = 0\n",
                      "\(file):3:1: the retention of profile 'home' has no rule; give keep-last, keep-hourly, keep-daily, "
                        + "keep-weekly, keep-monthly, keep-yearly, keep-within or keep-tag (or remove it to keep every backup)")
        assertProblem("[profiles.\"my laptop\"]\nsources = [\"/a\"]\n",
                      "\(file):1:1: the profile name 'my laptop' may hold only letters, digits, '-', '_' and '.' "
                        + "(it names cron entries and systemd units)")
    }

    func testMissingAndEmptySources() {
        assertProblem("[profiles.home]\ndestination = \"/b\"\n",
                      "\(file):1:1: profile 'home' has no 'sources'; add sources = [\"/path/to/back/up\"]", kind: .missingKey)
        assertProblem("[profiles.home]\nsources = []\n", "\(file):2:1: 'sources' must list at least one path")
        assertProblem("[profiles.home]\nsources = [\"\"]\n", "\(file):2:1: 'sources' holds an empty path")
        assertProblem("[profiles]\nhome = { level = 3 }\n",
                      "\(file):2:1: profile 'home' has no 'sources'; add sources = [\"/path/to/back/up\"]")
    }

    // MARK: Several problems

    func testEveryProblemIsReportedInFileOrder() {
        assertProblems("""
            [profiles.db]
            sources = ["/var/lib"]
            [profiles.db.retention]
            keep-dayly = 3

            [profiles.home]
            level = "3"
            exlude = ["a"]
            compression = "zstdd"
            """, [
                "\(file):4:1: unknown key 'keep-dayly' in the retention of profile 'db'; did you mean 'keep-daily'?",
                "\(file):6:1: profile 'home' has no 'sources'; add sources = [\"/path/to/back/up\"]",
                "\(file):7:1: 'level' must be a whole number, not a string",
                "\(file):8:1: unknown key 'exlude' in profile 'home'; did you mean 'exclude'?",
                "\(file):9:1: unknown compression 'zstdd'; use zstd, gzip, xz, lz4 or none (did you mean 'zstd'?)",
            ])
    }
}
