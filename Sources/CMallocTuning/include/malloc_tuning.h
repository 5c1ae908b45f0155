#ifndef RD_MALLOC_TUNING_H
#define RD_MALLOC_TUNING_H

/// Keeps freed memory in the heap for the next input rather than handing it back, and keeps
/// buffers up to 32 MiB in the heap rather than mapping each one (glibc's mallopt:
/// M_TRIM_THRESHOLD 128 MiB, M_MMAP_THRESHOLD 32 MiB). Returns 0 when both were set, -1 when
/// either was refused or the C library is not glibc (nothing changes then).
int rd_tune_malloc_for_bulk_work(void);

#endif
