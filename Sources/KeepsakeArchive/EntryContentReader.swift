/// The content of one archive entry, read a block at a time: an `ArchiveReader` at an
/// entry, or a file put together from several archives (a file stored by blocks).
public protocol EntryContentReader: AnyObject {
    /// The next bytes of the content and their offset in the file (offsets jump over holes,
    /// which read as zeros); nil at the end. The bytes stay valid until the next call.
    func nextBlock() throws -> (bytes: UnsafeRawBufferPointer, offset: Int64)?
    /// Passes over the rest of the content.
    func skipContent() throws
}

extension ArchiveReader: EntryContentReader {}
