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
//     completed kSync was invoked.
//
// Engines, chosen automatically (CheckOptions::engine = kAuto). Every verdict
// comes from an exact engine; kInconclusive means an exact engine ran out of
// its budget, never "probably fine".
//   fast-*       pre-filter only, for queue/stack/priority queue/log (when
//                the initial state is empty): necessary conditions — unique
//                values, conservation (every inserted value observed or
//                removed exactly once, nothing invented), per-producer
//                FIFO/LIFO, sortedness, log positions. A failure is a real
//                violation, reported with the pre-filter's clear reason and
//                its name ("fast-queue", ...); a pass decides nothing.
//   exact-queue, exact-stack, exact-pq
//                queues, stacks and priority queues with unique inserted
//                values (crash/internal/checker_collections.h; the argument
//                is at the top of src/crash/checker_collections.cc). The
//                pending operations are resolved exactly — with unique values
//                whether a pending insert took effect follows from where its
//                value went, the values missing from the recovered state are
//                matched to the pending removes (m! candidates, m <= pending
//                removes), detectability tries every subset of the answered
//                pending operations as "took effect before the crash" — and
//                the recovered state becomes observer removes after every
//                operation. Each candidate, a complete history, is decided in
//                O(n log n): queue by the FIFO-order/empty-block
//                characterization (Kahn with thresholds), stack by the
//                cover/opening decomposition (Abdulla et al., LiMo), priority
//                queue by a greedy over values in increasing order that keeps
//                every lifetime minimal; a history that real time orders
//                totally (one thread) is simply run. Differential tests
//                compare them with exhaustive search on tens of thousands of
//                small random histories (tests/crash/checker_test.cc).
//   exact        the generic exhaustive search (Wing & Gong / Lowe): depth
//                first over linearizations, memoized on (per-chain prefix
//                lengths, 128-bit hash of the spec state) — the operations are
//                split into as many real-time chains as overlap at once
//                (the threads), so there is no limit on the history's length.
//                Used for logs, registers, buffered durable
//                linearizability, and queues/stacks/priority queues whose
//                values are not unique ("exact (values not unique)"); bounded
//                by node_budget nodes.
//   exact-per-key
//                sets and maps (durable linearizability and detectability):
//                the generic search key by key — linearizability is local, so
//                a long history over many keys stays exact (a state not in
//                the spec's form — keys strictly ascending — is a violation,
//                never normalised). Buffered durable linearizability is never
//                split (its prefix is global).
// kInconclusive happens only when the generic search (whole history, or one
// key) exceeds node_budget nodes, or when a polynomial engine would have to
// try more than node_budget candidate resolutions of the pending operations
// (8 or more values missing from the recovered state that pending removes
// must have taken), or when more than 20 pending operations have recover_op
// answers (2^20 subsets).
// CheckOptions::engine = kExact forces the generic search; kFast runs the
// pre-filter alone (a test aid: its pass proves nothing).
// The result names the engine that decided ("exact-queue", "exact",
// "exact-per-key", "fast-queue" for a pre-filter violation, ...).
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
  // kAuto: see above; kExact: the generic search only; kFast: the fast
  // pre-filter only (never a proof of correctness).
  enum class Engine { kAuto, kExact, kFast } engine = Engine::kAuto;
  // Unused since every history is decided exactly (kept for source
  // compatibility; it used to hand longer histories to the fast checks).
  std::size_t exact_max_ops = 400;
  // Generic search: nodes before giving up (kInconclusive). Polynomial
  // engines: complete histories (resolutions of the pending operations)
  // decided before giving up — never reached by realistic histories.
  std::size_t node_budget = 20'000;
};

struct CheckResult {
  enum class Verdict { kOk, kViolation, kInconclusive } verdict = Verdict::kOk;
  std::string property;  // "durable-linearizability", "detectability", "buffered-durable-linearizability"
  std::string engine;    // "exact-queue", "exact-stack", "exact-pq", "exact", "exact-per-key", "fast-queue", ...
  std::string reason;    // why, for violations and inconclusive results
  std::uint64_t nodes = 0;  // generic search: nodes visited; polynomial engines: work steps + candidates
  bool ok() const { return verdict == Verdict::kOk; }
  bool violation() const { return verdict == Verdict::kViolation; }
};

CheckResult check_durable_linearizability(const CheckInput& in, const CheckOptions& opt = {});
// Uses in.recovered and in.observed_after (and in.observed).
CheckResult check_detectability(const CheckInput& in, const CheckOptions& opt = {});
CheckResult check_buffered_durable_linearizability(const CheckInput& in, const CheckOptions& opt = {});

// Failure atomicity of multi-store regions (src/crash/checker_regions.cc):
// every operation of in.ops is one failure-atomic region whose sequential
// semantics is `spec` (a subject's RegionSpec, crash/subject.h); the
// recovered state must be the state after some prefix of the regions —
// every completed region, any subset of the regions in flight, in an order
// consistent with happens-before (real time: a region that responded
// before another was invoked comes first; program order within a thread),
// each applied whole, with each completed region's response matching —
// and nothing of a partial region may be visible. With
// RegionSpec::undo_dependents (ATLAS sections that release a lock early) a
// completed region may also be left out, with the rest of its thread, when
// a chain of left-out regions of other threads, each invoked before the
// next responded, leads from it to a region in flight. Exact (a memoized search
// over the orders of overlapping regions, as the generic engine);
// kInconclusive past opt.node_budget nodes. Property "failure-atomicity",
// engine "exact-regions".
CheckResult check_failure_atomicity(const CheckInput& in, const RegionSpec& spec, const CheckOptions& opt = {});

}  // namespace ferrite::crash
