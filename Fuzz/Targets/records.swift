// libFuzzer target: the small records a destination holds besides archives, which anyone who
// can write the destination can forge: a lock record (LockOwner), a summary line (the first
// line of a manifest, or an encrypted backup's summary in the clear), and the check of a
// summary against its object's name (BackupCatalog.disagreement). Any input must end in a
// record or nil/an error; never a crash, hang or leak. Checked on every input:
//   - a lock record written back and read again gives the same holder and scope;
//   - a summary, once written in Keepsake's form, reads back the same, and so does its
//     clear form (with no sources);
//   - a summary agrees with the name Keepsake would give it (host made file-safe, its id,
//     its archive's name), and never with another id's name;
//   - a signature object (BackupSignature) written back reads the same, its statement reads
//     only when it is in exactly the form Keepsake writes, and a public key reads back as
//     itself from its one-line form.
@testable import BackupCore
import Foundation
import Glibc
import KeepsakeJSON
import KeepsakeModel
@testable import KeepsakeSigning
@testable import KeepsakeStorage
import KeepsakeSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecords(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    if let json = try? JSONParser.parse(bytes), let owner = LockOwner(json: json) {
        let again = (try? JSONParser.parse(Array(owner.json.serialized().utf8))).flatMap(LockOwner.init(json:))
        require(again?.pid == owner.pid && again?.host == owner.host && again?.scope == owner.scope
                    && again?.processStartTicks == owner.processStartTicks, "a lock record did not read back the same")
        _ = owner.isStaleOnThisHost
        _ = LockError.held(by: owner, destination: "s3://fuzz/p").description
    }
    checkSignatureRecords(bytes)
    guard let read = try? Manifest.parseSummary(bytes) else { return 0 }
    _ = BackupCatalog.disagreement(read, manifestName: String(decoding: bytes.prefix(80), as: UTF8.self))
    // Written once, a summary is in Keepsake's own form (times to the second): from then on
    // writing and reading it again changes nothing.
    guard let summary = try? Manifest.parseSummary(Array((read.json.serialized() + "\n").utf8)) else {
        require(false, "a summary that was read could not be read again once written")
        return 0
    }
    let again = try? Manifest.parseSummary(Array((summary.json.serialized() + "\n").utf8))
    require(again == summary, "a summary did not read back the same")
    if !summary.sourcesHidden {
        let clear = try? Manifest.parseSummary(summary.publicSummaryLine)
        require(clear == summary.publicSummary, "a summary's clear form did not read back as itself")
    }
    let host = HostIdentity.fileSafe(summary.host)
    let encrypted = summary.encryption != nil
    let name = BackupNaming.manifestName(host: host, id: summary.id, encrypted: encrypted)
    if !host.isEmpty, !host.contains("_") {
        var named = summary
        named.archive = named.archive.map {
            .init(name: BackupNaming.archiveName(host: host, id: summary.id, compression: summary.compression, encrypted: encrypted),
                  size: $0.size, sha256: $0.sha256)
        }
        require(BackupCatalog.disagreement(named, manifestName: name) == nil, "a summary disagrees with its own name \(name)")
        let other = BackupID(date: Date(timeIntervalSince1970: 0))
        require(BackupCatalog.disagreement(named, manifestName: BackupNaming.manifestName(host: host, id: other)) != nil,
                "a summary agrees with another id's name")
    }
    return 0
}

/// A signature object, a signed statement and a public key: read, written back, read again.
private func checkSignatureRecords(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    if let statement = SignedStatement(parsing: text) {
        require(statement.text == text, "a statement read from text that is not its own form")
    }
    if let key = try? SigningPublicKey(parsing: text) {
        require((try? SigningPublicKey(parsing: key.encoded)) == key, "a public key did not read back from its one-line form")
        require((try? SigningPublicKey(parsing: key.pem)) == key, "a public key did not read back from its PEM form")
    }
    guard let signature = BackupSignature(parsing: bytes) else { return }
    require(BackupSignature(parsing: signature.bytes) == signature, "a signature object did not read back the same")
    // A forged object must simply not verify (random bytes never make a valid signature).
    _ = signature.isSigned(by: signature.claimedKey)
    if let statement = SignedStatement(parsing: signature.statementText) {
        require(statement.text == signature.statementText, "a signed statement read from text that is not its own form")
    }
}

/// Stops with the message (libFuzzer keeps the input) when an invariant does not hold.
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    guard !condition else { return }
    let text = "records invariant broken: \(message())\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    abort()
}
