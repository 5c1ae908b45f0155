#ifndef RECEIPTDASH_BUILD_STAMP_H
#define RECEIPTDASH_BUILD_STAMP_H

/// The commit the binary was built from, as `make install` and `make dist` stamp it into the
/// linked file (.ci/stamp-commit.py); "unknown" in a build nobody stamped (`swift build`).
const char *receiptdash_build_commit(void);

#endif
