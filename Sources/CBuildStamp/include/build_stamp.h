#ifndef RECEIPTDASH_BUILD_STAMP_H
#define RECEIPTDASH_BUILD_STAMP_H

/// The commit the binary was built from, as `make install` and `make dist` stamp it into the
/// linked file (.ci/stamp-commit.py); "unknown" in a build nobody stamped (`swift build`).
const char *receiptdash_build_commit(void);

/// The checkout's `HEAD` file as it was at compile time ("" without a checkout).
const char *receiptdash_git_head(void);

/// The file of the branch `HEAD` named when the package was read ("" when there was none or
/// it is packed), and that branch's name (`refs/heads/main`).
const char *receiptdash_git_ref(void);
const char *receiptdash_git_ref_name(void);

/// The checkout's `packed-refs` file ("" when there is none): a fresh clone's branches.
const char *receiptdash_git_packed_refs(void);

#endif
