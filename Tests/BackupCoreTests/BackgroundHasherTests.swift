import XCTest
@testable import BackupCore

final class BackgroundHasherTests: XCTestCase {
    /// Deterministic bytes (a linear congruential sequence).
    private func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
    }

    func testDigestsMatchTheInlineHasherForPiecesOfEverySize() {
        let background = BackgroundHasher(chunkSize: 4096, buffers: 2)
        for (index, size) in [0, 1, 4095, 4096, 4097, 100_000, 1_048_577].enumerated() {
            let data = bytes(size, seed: UInt64(index + 1))
            let inline = SHA256Hasher()
            var offset = 0
            var piece = 1
            while offset < data.count {
                let end = min(data.count, offset + piece)
                data[offset..<end].withUnsafeBytes { background.update($0); inline.update($0) }
                offset = end
                piece = piece * 3 + 7
            }
            XCTAssertEqual(background.finalizeHex(), inline.finalizeHex(), "size \(size)")
        }
    }

    func testZeroRunsAreHashedInOrder() {
        let background = BackgroundHasher(chunkSize: 4096, buffers: 2)
        let head = bytes(5000, seed: 9), tail = bytes(3000, seed: 10)
        head.withUnsafeBytes { background.update($0) }
        background.updateZeros(70_000)
        tail.withUnsafeBytes { background.update($0) }
        XCTAssertEqual(background.finalizeHex(), SHA256Hasher.hex(of: head + [UInt8](repeating: 0, count: 70_000) + tail))
    }

    func testEachDigestStartsAfresh() {
        let background = BackgroundHasher()
        let first = bytes(10_000, seed: 3)
        first.withUnsafeBytes { background.update($0) }
        _ = background.finalizeHex()
        let second = bytes(20_000, seed: 4)
        second.withUnsafeBytes { background.update($0) }
        XCTAssertEqual(background.finalizeHex(), SHA256Hasher.hex(of: second))
        XCTAssertEqual(background.finalizeHex(), SHA256Hasher.hex(of: []), "nothing handed over: the empty digest")
    }
}
