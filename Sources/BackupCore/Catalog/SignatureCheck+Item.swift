import KeepsakeModel
import KeepsakeSigning
import KeepsakeStorage

// The signing target knows no catalog: a listed backup is checked here, in its terms.
extension SignatureCheck {
    /// Whether `item` carries a signature by the key made for it, naming its manifest and
    /// the archive its summary records, whose objects have the signed sizes in `sizes`. Only
    /// the signature is read: what prune needs to tell a backup this key signed from one
    /// planted beside it, at the cost of one small read per backup.
    public func vouchesFor(_ item: BackupCatalog.Item, in storage: any ReadableStorage, sizes: [String: Int64]) -> Bool {
        guard let stem = BackupNaming.stem(of: item.manifestName), let facts = item.summary?.archive else { return false }
        return (try? check(stem: stem, label: item.id.rawValue, in: storage, sizes: sizes, reading: [item.manifestName],
                           archiveFacts: facts, hashing: false)) != nil
    }
}
