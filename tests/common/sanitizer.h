// tests/common/sanitizer.h — what a sanitizer build cannot run.
#pragma once

#include <gtest/gtest.h>

// Multi-threaded crash campaigns fork() the crashed machine out of a process
// whose worker threads are running. GCC 12's ASan allocator has no fork
// handling: the child can inherit its lock held by a thread that no longer
// exists, and hang. glibc's malloc is fork-safe, so the release build runs
// these tests; under ASan they skip (in a test body, before the campaign).
#if defined(__SANITIZE_ADDRESS__)
#define FERRITE_SKIP_THREADED_FORK_UNDER_ASAN()                                                       \
  GTEST_SKIP() << "forks a multi-threaded process: GCC 12's ASan allocator can hang the child; "   \
                  "the release build runs this test"
#else
#define FERRITE_SKIP_THREADED_FORK_UNDER_ASAN() static_cast<void>(0)
#endif
