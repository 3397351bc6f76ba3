/// What an object's name says about it in a store.
public enum ObjectNaming: Sendable, Equatable {
    /// A destination: every name is Keepsake's own (`HOST_ID.tar.zst.age`), so a name says
    /// whether an object is encrypted and whose backup it belongs to.
    case keepsake
    /// A folder of the user's (one holding an archive copied out of a destination): names
    /// were chosen by people, so an object's first bytes say what it is.
    case foreign
}
