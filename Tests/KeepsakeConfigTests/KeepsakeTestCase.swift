import KeepsakeTestSupport

/// The base of this target's test cases (see `KeepsakeTestSupport.KeepsakeTestCase`).
typealias KeepsakeTestCase = KeepsakeTestSupport.KeepsakeTestCase
