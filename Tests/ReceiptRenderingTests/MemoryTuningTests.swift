import ReceiptRendering
import Testing

/// Bulk work's allocator settings reach glibc through the C shim (mallopt accepts both).
@Suite struct MemoryTuningTests {
    @Test func glibcTakesTheBulkSettings() {
        #if canImport(Glibc)
        #expect(MemoryTuning.forBulkWork())
        #else
        #expect(!MemoryTuning.forBulkWork())
        #endif
    }
}
