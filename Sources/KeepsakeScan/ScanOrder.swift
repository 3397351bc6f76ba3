/// The order a scan visits paths in, and so the order of archive entries and manifest
/// lines: each folder before what it holds, and the names in a folder sorted bytewise. As
/// a comparison of whole paths that is bytewise with `/` sorting before every other byte.
package enum ScanOrder {
    /// Whether `a` comes before `b`.
    @inlinable package static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        compare(a, b) < 0
    }

    /// Negative when `a` comes first, zero when they are the same path, positive otherwise.
    @inlinable package static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBufferPointer { left in
            b.withUnsafeBufferPointer { right in
                let common = min(left.count, right.count)
                var index = 0
                while index < common {
                    let x = left[index]
                    let y = right[index]
                    if x != y {
                        // A name that ends (at `/`) sorts before a longer one with the same start.
                        let rankX = x == 47 ? 0 : Int(x) + 1
                        let rankY = y == 47 ? 0 : Int(y) + 1
                        return rankX - rankY
                    }
                    index += 1
                }
                return left.count - right.count
            }
        }
    }
}
