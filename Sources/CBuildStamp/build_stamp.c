#include "build_stamp.h"

// A writable array, so no compiler can fold its contents: .ci/stamp-commit.py finds the marker
// in the linked binary and writes the commit over "unknown", within these 96 bytes.
char receiptdash_build_stamp[96] = "receiptdash-build-commit:unknown";

const char *receiptdash_build_commit(void) {
    return receiptdash_build_stamp + sizeof("receiptdash-build-commit:") - 1;
}
