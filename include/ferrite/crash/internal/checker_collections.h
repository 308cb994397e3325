// ferrite/crash/internal/checker_collections.h — the polynomial exact
// engines for queues, stacks and priority queues with unique values
// (src/crash/checker_collections.cc). Internal to the checker
// (crash/checker.h is the interface); exposed for tests of the engines.
//
// A *complete collection history* is what the engines decide: every
// operation has a known response, values are unique, and every inserted
// value is removed exactly once (the recovered state is turned into observer
// removes after every operation, followed by one removal that finds the
// structure empty). The checker's front end (check_collection) turns a crash
// history — pending operations, the recovered state, recover_op answers —
// into a few such histories (see the argument at the top of the .cc file).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ferrite/crash/checker.h"

namespace ferrite::crash::internal {

struct CItem {
  enum Kind : std::uint8_t { kIns, kRem, kPeek, kEmptyRem, kEmptyPeek };
  Kind kind = kIns;
  std::int64_t value = 0;  // inserted / returned value (unused for the empties)
  // Real-time stamps, transformed: an invocation is even, a response odd, and
  // a precedes b in real time iff a.resp < b.inv. inv < resp.
  std::uint64_t inv = 0, resp = 1;
  // Index into CheckInput::ops; kObserver for the recovered state's observer
  // removes (and the final empty one), kInitial for the initial state.
  std::int64_t src = 0;
  static constexpr std::int64_t kObserver = -1;
  static constexpr std::int64_t kInitial = -2;
};

struct EngineVerdict {
  bool ok = true;
  std::string reason;       // for a violation
  std::uint64_t steps = 0;  // work done (values and empties processed)
};

// "t1#5 dequeue() -> 7", "t0#3 push(4) (pending)" (crash/checker.cc).
std::string describe_op(const HistoryOp& h);

// Describes an item for a reason text.
using ItemDescriber = std::function<std::string(const CItem&)>;

// Each decides linearizability of a complete collection history exactly.
EngineVerdict check_queue_history(const std::vector<CItem>& items, const ItemDescriber& describe);
EngineVerdict check_stack_history(const std::vector<CItem>& items, const ItemDescriber& describe);
EngineVerdict check_pq_history(const std::vector<CItem>& items, const ItemDescriber& describe);

// The front end: durable linearizability (detect = false) or detectability
// (detect = true) of a crash history of a queue, stack or priority queue.
// nullopt when the polynomial engines do not apply (values not unique, or
// another spec): the caller then uses the generic search.
// `candidate_budget` bounds the number of complete histories tried (the
// resolutions of pending operations); beyond it the result is inconclusive.
std::optional<CheckResult> check_collection(const CheckInput& in, bool detect, std::uint64_t candidate_budget);

}  // namespace ferrite::crash::internal
