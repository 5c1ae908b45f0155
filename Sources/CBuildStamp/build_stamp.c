#include "build_stamp.h"

// A writable array, so no compiler can fold its contents: .ci/stamp-commit.py finds the marker
// in the linked binary and writes the commit over "unknown", within these 96 bytes.
char receiptdash_build_stamp[96] = "receiptdash-build-commit:unknown";

const char *receiptdash_build_commit(void) {
    return receiptdash_build_stamp + sizeof("receiptdash-build-commit:") - 1;
}

// The checkout's files Package.swift names (gitCommitFiles), embedded as they are when this
// file is compiled; the compiler's dependency file lists them, so a commit, or a switch of
// branch, compiles it again. Empty when there is no checkout or the file is gone (packed).
#pragma clang diagnostic ignored "-Wc23-extensions"

#if defined(RECEIPTDASH_GIT_HEAD)
#if __has_embed(RECEIPTDASH_GIT_HEAD)
static const char git_head[] = {
#embed RECEIPTDASH_GIT_HEAD suffix(,)
    0};
#define HAS_GIT_HEAD 1
#endif
#endif
#ifndef HAS_GIT_HEAD
static const char git_head[] = "";
#endif

#if defined(RECEIPTDASH_GIT_REF)
#if __has_embed(RECEIPTDASH_GIT_REF)
static const char git_ref[] = {
#embed RECEIPTDASH_GIT_REF suffix(,)
    0};
#define HAS_GIT_REF 1
#endif
#endif
#ifndef HAS_GIT_REF
static const char git_ref[] = "";
#endif

#if defined(RECEIPTDASH_GIT_PACKED_REFS)
#if __has_embed(RECEIPTDASH_GIT_PACKED_REFS)
static const char git_packed_refs[] = {
#embed RECEIPTDASH_GIT_PACKED_REFS suffix(,)
    0};
#define HAS_GIT_PACKED_REFS 1
#endif
#endif
#ifndef HAS_GIT_PACKED_REFS
static const char git_packed_refs[] = "";
#endif

#if defined(RECEIPTDASH_GIT_REF_NAME)
static const char git_ref_name[] = RECEIPTDASH_GIT_REF_NAME;
#else
static const char git_ref_name[] = "";
#endif

const char *receiptdash_git_head(void) { return git_head; }
const char *receiptdash_git_ref(void) { return git_ref; }
const char *receiptdash_git_ref_name(void) { return git_ref_name; }
const char *receiptdash_git_packed_refs(void) { return git_packed_refs; }
