// libFuzzer target: the configuration file's TOML parser and the validation of its result
// (ConfigFile). Any input must end in a table (and a ConfigFile or a ConfigError) or in a
// TOMLError; never a crash, hang or leak. Checked on every input:
//   - an error names a line and a column of 1 or more;
//   - a parsed table has a position for every key, no key twice, only finite floats;
//   - the byte and the String entry points agree on valid UTF-8;
//   - every profile of a valid configuration is found again by its name.
import Glibc
import KeepsakeConfig
import KeepsakeTOML

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTOML(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let parsed: Result<TOMLTable, TOMLError>
    do {
        parsed = .success(try TOMLParser.parse(bytes: bytes))
    } catch {
        parsed = .failure(error)
    }
    switch parsed {
    case .success(let table):
        check(table, depth: 0)
    case .failure(let error):
        require(error.line >= 1 && error.column >= 1, "TOMLError at line \(error.line), column \(error.column)")
        _ = error.description(file: "config.toml")
    }
    // A String holds valid UTF-8: then both entry points must say the same.
    if let text = String(validating: bytes, as: UTF8.self) {
        switch (parsed, Result { () throws(TOMLError) in try TOMLParser.parse(text) }) {
        case (.success(let left), .success(let right)):
            require(left == right, "parse(bytes:) and parse(_:) made different tables")
        case (.failure(let left), .failure(let right)):
            require(left == right, "parse(bytes:) and parse(_:) failed differently: \(left) / \(right)")
        default:
            require(false, "parse(bytes:) and parse(_:) disagree on whether the input is valid")
        }
    }

    // The configuration file on top of the table.
    do {
        let config = try ConfigFile(bytes: bytes, path: "/fuzz/config.toml", home: "/home/fuzz")
        for name in config.profileNames {
            let profile = try config.profile(named: name)
            require(profile.name == name && !profile.sources.isEmpty, "profile '\(name)' came back wrong")
        }
    } catch {
        require(!error.description.isEmpty, "a ConfigError without a message")
    }
    return 0
}

/// Checks the invariants of a parsed table and of everything in it.
private func check(_ table: TOMLTable, depth: Int) {
    require(Set(table.keys).count == table.keys.count, "a key listed twice: \(table.keys)")
    for key in table.keys {
        guard let value = table[key] else { return require(false, "key '\(key)' listed without a value") }
        if let position = table.position(of: key) {
            require(position.line >= 1 && position.column >= 1, "key '\(key)' at \(position)")
        } else {
            require(false, "key '\(key)' of a parsed table has no position")
        }
        check(value, depth: depth + 1)
    }
}

private func check(_ value: TOMLValue, depth: Int) {
    // Arrays of tables count two levels per element, so twice the limit bounds any document.
    require(depth <= 2 * TOMLParser.maxDepth + 2, "nested \(depth) deep, over the limit")
    switch value {
    case .float(let number): require(number.isFinite, "a float that is not finite: \(number)")
    case .array(let elements): for element in elements { check(element, depth: depth + 1) }
    case .table(let table): check(table, depth: depth)
    case .string, .integer, .bool: break
    }
}

/// Stops with the message (libFuzzer keeps the input) when an invariant does not hold.
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    guard !condition else { return }
    let text = "toml invariant broken: \(message())\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    abort()
}
