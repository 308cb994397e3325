// ferrite/baselines/internal/sela_petrank_faults.h — test machinery of the
// Sela–Petrank queues (baselines/sela_petrank.h): the persistence steps a
// deliberately broken variant leaves out. The crash campaigns must catch
// every one (tests/baselines/crash_test.cc); users never name these.
#pragma once

namespace ferrite::baselines::sela_petrank::internal {

enum Fault : unsigned {
  kNoFaults = 0,
  kNoNodePwb = 1u << 0,       // OptUnlinkedQ: the linked node is not written back (l. "FLUSH(node)")
  kNoHeadIndexPwb = 1u << 1,  // the dequeuer's headIndex is not written back
  kNoSuffixPwb = 1u << 2,     // OptLinkedQ: the not-persisted suffix is not written back
  kNoRecordFence = 1u << 3,   // OptLinkedQ: no pfence between the suffix write-backs and the record
};

}  // namespace ferrite::baselines::sela_petrank::internal
