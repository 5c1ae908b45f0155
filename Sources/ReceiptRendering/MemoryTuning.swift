/// Allocator settings for commands that judge many inputs in one process.
public enum MemoryTuning {
    /// Many short-lived buffers of 64 KB to 1 MB (rendered JSON, receipt bytes): keep them in
    /// the heap rather than map and unmap each one, and keep freed memory for the next input
    /// rather than hand it back (measured on `inspect --format json` over 480 receipts: a third
    /// of the time spent in the kernel). glibc only; elsewhere nothing changes.
    public static func forBulkWork() {
        #if os(Linux) && canImport(Glibc)
        _ = glibcMallopt(mTrimThreshold, 128 << 20)
        _ = glibcMallopt(mMmapThreshold, 32 << 20)
        #endif
    }

    #if os(Linux) && canImport(Glibc)
    // <malloc.h> is not part of Swift's Glibc module; these are its documented values.
    private static let mTrimThreshold: Int32 = -1
    private static let mMmapThreshold: Int32 = -3
    #endif
}

#if os(Linux) && canImport(Glibc)
@_silgen_name("mallopt")
private func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
#endif
