// tests/common/sanitizer.h — what a sanitizer build cannot run.
#pragma once

#include <gtest/gtest.h>

// Multi-threaded crash campaigns stop the other workload threads with a
// signal wherever they are (possibly inside the allocator) while the
// crashing thread allocates. glibc gives each of a few threads its own
// arena; GCC 12's ASan allocator shares size-class locks between threads, so
// the crashing thread can wait forever for a lock a sleeping thread holds.
// The release build runs these tests; under ASan they skip (in a test body,
// before the campaign).
#if defined(__SANITIZE_ADDRESS__)
#define FERRITE_SKIP_THREADED_FORK_UNDER_ASAN()                                                       \
  GTEST_SKIP() << "forks a multi-threaded process: GCC 12's ASan allocator can hang the child; "   \
                  "the release build runs this test"
#else
#define FERRITE_SKIP_THREADED_FORK_UNDER_ASAN() static_cast<void>(0)
#endif
