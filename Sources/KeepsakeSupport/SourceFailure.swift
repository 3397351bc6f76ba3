/// An error that says bytes could not be had — the store failed, the run was stopped, the
/// caller's own rule refused them — as opposed to bytes that were had and are wrong. A reader
/// of a format (an archive, a compressed stream) passes such an error on as it is, instead
/// of calling the data it was reading damaged: a Ctrl-C or a lost connection is not damage.
/// Each layer marks its own errors; the readers need not know the layers above them.
public protocol SourceFailure: Error {}
