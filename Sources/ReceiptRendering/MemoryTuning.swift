import CMallocTuning

/// Allocator settings for commands that judge many inputs in one process.
public enum MemoryTuning {
    /// Many short-lived buffers of 64 KB to 1 MB (rendered JSON, receipt bytes): keep them in
    /// the heap rather than map and unmap each one, and keep freed memory for the next input
    /// rather than hand it back (measured on `inspect --format json` over 480 receipts: a third
    /// of the time spent in the kernel). glibc only (the C shim's `mallopt`); elsewhere nothing
    /// changes.
    @discardableResult
    public static func forBulkWork() -> Bool {
        rd_tune_malloc_for_bulk_work() == 0
    }
}
