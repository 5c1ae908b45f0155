#include "malloc_tuning.h"

// Any C library header defines __GLIBC__ on glibc (through <features.h>).
#include <stdlib.h>

#if defined(__GLIBC__)
#include <malloc.h>

int rd_tune_malloc_for_bulk_work(void) {
    int trim = mallopt(M_TRIM_THRESHOLD, 128 << 20);
    int mmap = mallopt(M_MMAP_THRESHOLD, 32 << 20);
    return (trim == 1 && mmap == 1) ? 0 : -1;
}
#else
int rd_tune_malloc_for_bulk_work(void) { return -1; }
#endif
