// ferrite/crash/checker.h — sequential specifications and durability checkers.
//
// What it is: given a history (crash/history.h) cut by a crash, the abstract
// state a structure recovered to (Subject::observe), and for detectable
// structures the answers of recover_op, decide whether the crash image
// respects
//   - durable linearizability (Izraelevitz et al.): the recovered state is
//     the state after a linearization of all completed operations plus some
//     subset of the pending ones, respecting real-time order, with the
//     completed operations' responses matching;
//   - detectability (PBcomb paper §2): additionally, each pending operation's
//     recover_op answer agrees with that linearization — pending operations
//     that took effect are linearized before the crash with recover_op's
//     response; the others take effect after the crash, in recover_op call
//     order, after every pre-crash operation, and the state after them is the
//     second observation;
//   - buffered durable linearizability (nbMontage): the recovered state is
//     the state after a real-time-consistent prefix (closed under real-time
//     predecessors) that contains every operation completed before the last
//     kSync returned.
//
// Two engines, chosen automatically (CheckOptions::engine = kAuto):
//   exact  Wing–Gong / Lowe depth-first search over linearizations with
//          memoization on (set of linearized ops, hash of the spec state); it
//          is used when the history has at most exact_max_ops operations and
//          the search stays within node_budget;
//   fast   structure-specific necessary conditions for long histories
//          (queue/stack/priority queue/log): unique values, conservation
//          (every inserted value observed or removed exactly once, nothing
//          invented), per-producer FIFO for queues, per-producer LIFO for
//          stacks, log positions. Sets, maps and registers have no fast
//          check: beyond the exact engine's reach the result is
//          kInconclusive.
// Sets and maps (durable linearizability and detectability) are checked
// key by key, each key with the exact engine ("exact-per-key"):
// linearizability is local, so a long history over many keys stays exact.
// Buffered durable linearizability is never split (its prefix is global).
// The result names the engine used ("exact", "exact-per-key", "fast-queue", ...).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferrite/crash/history.h"
#include "ferrite/crash/subject.h"

namespace ferrite::crash {

using State = std::vector<std::int64_t>;

std::string_view spec_name(Spec s);
std::string_view op_name(std::int32_t kind);
// True when `kind` belongs to the spec (kSync belongs to every spec).
bool spec_accepts(Spec s, std::int32_t kind);
// Applies op to state (in the observe() representation) and returns the
// response. Throws std::invalid_argument for an op the spec does not accept.
Response spec_apply(Spec s, State& state, const Op& op);
std::string format_op(const Op& op);
std::string format_response(const Response& r);
std::string format_state(const State& s, std::size_t max_items = 16);

// An operation pending at the crash and what Subject::recover_op answered.
struct RecoveredOp {
  std::size_t index;  // into CheckInput::ops
  Response response;
};

struct CheckInput {
  Spec spec = Spec::kQueue;
  State initial;                  // observe() right after create()
  std::vector<HistoryOp> ops;     // completed and pending
  State observed;                 // observe() after recover()
  // Detectability: recover_op answers for every pending op, in call order,
  // and observe() after those calls.
  std::vector<RecoveredOp> recovered;
  State observed_after;
};

struct CheckOptions {
  enum class Engine { kAuto, kExact, kFast } engine = Engine::kAuto;
  std::size_t exact_max_ops = 400;     // kAuto: exact only up to this many ops
  std::size_t node_budget = 20'000;    // exact: DFS nodes before giving up
};

struct CheckResult {
  enum class Verdict { kOk, kViolation, kInconclusive } verdict = Verdict::kOk;
  std::string property;  // "durable-linearizability", "detectability", "buffered-durable-linearizability"
  std::string engine;    // "exact", "fast-queue", ...
  std::string reason;    // why, for violations and inconclusive results
  std::uint64_t nodes = 0;  // exact: DFS nodes visited
  bool ok() const { return verdict == Verdict::kOk; }
  bool violation() const { return verdict == Verdict::kViolation; }
};

CheckResult check_durable_linearizability(const CheckInput& in, const CheckOptions& opt = {});
// Uses in.recovered and in.observed_after (and in.observed).
CheckResult check_detectability(const CheckInput& in, const CheckOptions& opt = {});
CheckResult check_buffered_durable_linearizability(const CheckInput& in, const CheckOptions& opt = {});

}  // namespace ferrite::crash
