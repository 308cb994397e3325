// ferrite/crash/subject.h — what a crash campaign needs from a structure.
//
// crash/ knows nothing of any specific structure: each durable structure's
// adapter (adapters/, never the structure's own header) is turned into a
// Subject by adapters/adapter.h and registered here by its one registration
// (register_subject; expect_violation marks a deliberately broken variant
// that campaigns are expected to catch). Tests may register test-local
// subjects the same way. The reference adapter is adapters/reference_log.cc.
//
// Operations are encoded as (kind, arg) pairs interpreted by the sequential
// specification named by `spec()`; responses as (has_value, value):
//   ack / empty / none          {false, 0}
//   a value, an old value       {true, v}
//   a bool (set ops)            {true, 0 or 1}
//   an index (log append)       {true, i}
// The fast checkers used for long histories (queue, stack, priority queue,
// log) need the values a workload inserts to be unique: next_op should
// generate unique values (e.g. (tid << 40) | per-thread counter, nonzero).
//
// Protocol of a campaign (crash/campaign.h):
//   parent:  pool = fresh sim pool; s->create(pool, threads);
//            threads call s->apply(tid, seq, op) (seq = per-thread sequence
//            number, odd/even alternates: the PBcomb paper's toggle bit);
//   child at a crash point, per image: image installed at the pool base;
//            s->recover(pool, threads)           structure-level recovery;
//            s->observe()                       abstract state (durable
//                                               linearizability is checked);
//            for each op pending at the crash:  s->recover_op(tid, seq, op)
//                                               (detectable subjects only);
//            s->observe()                       again (detectability check).
//   Each image runs in its own forked process, a restarted machine: the
//   image is opened with pmem::Pool::open (header validation included) at
//   the same base address, and recover() receives THAT Pool — a different
//   object from the one create() got, in the state open() leaves it: re-
//   attach by root name (pool.root<T>(name) or the structure's attach),
//   never reuse Pool pointers kept from create(). The pool recovers itself
//   when it opens (pmem::Pool::recover: every root's registered hook,
//   pmem/root_registry.h, repairs and marks its structure, and the heap is
//   rebuilt once from the union): subjects only re-attach and never call
//   heap().recover_* (a root of a type with no registered hook keeps every
//   block: a leak, never a loss). CampaignConfig::recover_pool = false
//   opens the image without pool recovery (for subjects that demonstrate
//   hand-made heap recovery; they then call heap().recover_* once). Volatile state
//   of the Subject object (handles, locks, per-thread counters) is whatever
//   it was at the crash: rebuild what recovery needs. Persistence verbs
//   issued during recovery are counted but not simulated. recover() and
//   recover_op() may throw: that is reported as a violation.
//   The initial abstract state is observe() right after create().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ferrite/op.h"

namespace ferrite::pmem {
class Pool;
}

namespace ferrite::crash {

// The vocabulary is ferrite/op.h's; crash/ names it as it always has.
// Spec: the sequential specification (= the abstract structure).
using Spec = op::Abstract;
using OpKind = op::Kind;
using enum op::Kind;
using Op = op::Op;
using Response = op::Response;

// The sequential semantics of a workload whose operations are multi-store
// failure-atomic regions (the logging library's Array Swap and TPCC): each
// operation of the history is one region, `apply` runs it on an abstract
// state (observe()'s representation) and answers its response. A subject
// that has one is checked for failure atomicity (crash/checker.h,
// check_failure_atomicity) instead of against the built-in specifications.
struct RegionSpec {
  std::string name;  // "array-swap", "tpcc-new-order"
  std::function<Response(std::vector<std::int64_t>& state, const Op& op)> apply;
  std::function<std::string(const Op& op)> format;  // optional: the region's name in reports
  // ATLAS durability (lock-based regions that release a lock early): a
  // completed region may be undone together with a region it may have
  // acquired a lock from (one not in the recovered prefix, invoked before
  // it responded), and with it every later region of its thread.
  bool undo_dependents = false;
};

// Key and value sizes for the structures that hold byte strings
// (`ferrite crashtest --key-size A..B --value-size A..B`): each key or value
// the workload writes gets a size drawn from the range (deterministically
// from the element), and its bytes are checked byte for byte when read
// back (adapters/bytes_codec.h). 0..0: the structure's default.
struct DataSizes {
  std::size_t key_min = 0, key_max = 0;
  std::size_t value_min = 0, value_max = 0;
  bool bytes() const { return key_max != 0 || value_max != 0; }
};

class Subject {
 public:
  virtual ~Subject() = default;
  // Before create()/recover(): the sizes of keys and values (DataSizes).
  // Structures that hold 8-byte integers ignore them.
  virtual void set_data_sizes(const DataSizes& sizes) { (void)sizes; }
  virtual Spec spec() const = 0;
  // True when recover_op implements detectable recovery (the checker then
  // checks detectability as well as durable linearizability).
  virtual bool detectable() const = 0;

  // Creates the structure in `pool` for up to `threads` threads.
  virtual void create(pmem::Pool& pool, int threads) = 0;
  // Runs `op` as thread `tid` (0-based, < threads) with sequence number seq.
  virtual Response apply(int tid, std::uint64_t seq, const Op& op) = 0;
  // In the crashed child, after the image is installed: re-attach by root
  // name and run structure-level recovery (including heap recovery).
  virtual void recover(pmem::Pool& pool, int threads) = 0;
  // Detectable recovery of an operation pending at the crash: completes it
  // if it had not taken effect; returns its response either way.
  virtual Response recover_op(int tid, std::uint64_t seq, const Op& op) = 0;
  // The abstract state: queue front→back, stack top→bottom, heap sorted,
  // set sorted, map as k,v pairs sorted by key, register [bits], log in
  // order. Must not modify the structure (it is called twice per image).
  virtual std::vector<std::int64_t> observe() = 0;
  // Chooses the next operation for a workload (deterministic in rng state).
  virtual Op next_op(int tid, std::uint64_t& rng) = 0;
  // True for buffered durably linearizable structures (nbMontage): the
  // checker then demands only a real-time-consistent prefix that contains
  // every op completed before the last kSync was invoked.
  virtual bool buffered() const { return false; }
  // Non-null for a subject whose operations are regions with a semantics of
  // their own (RegionSpec above); it outlives the subject.
  virtual const RegionSpec* regions() const { return nullptr; }
  // Whether apply_group works: runs `ops` as thread `tid` (sequence
  // numbers seq, seq + 1, ...) in one failure-atomic region — several
  // operations per region, for the timing model's traces (the StrandWeaver
  // paper's Figure 10); the crash campaigns never group.
  virtual bool groups() const { return false; }
  virtual void apply_group(int tid, std::uint64_t seq, const std::vector<Op>& ops) {
    (void)tid;
    (void)seq;
    (void)ops;
    throw std::logic_error("apply_group on a subject that does not group operations");
  }
  // Crashes during create (CampaignConfig::crash_create): whether `pool`
  // (a restarted image) holds this structure's root. When it does not, the
  // campaign creates the structure afresh, as an application would.
  virtual bool has_structure(pmem::Pool& pool) { (void)pool; return true; }
  // Before create(): size the structure and its workload as a benchmark
  // does, keys (array elements, TPC-C items) drawn from [1, key_range],
  // instead of the campaigns' small ranges (which make every operation
  // meet every other). For the timing model's traces (`ferrite trace
  // --key-range`); the campaigns never call it. False: not supported.
  virtual bool size_for_bench(std::uint64_t key_range) { (void)key_range; return false; }
};

struct SubjectInfo {
  std::string structure;   // e.g. "pb-queue"
  std::string variant;     // e.g. "correct", "no-pfence"
  bool expect_violation;   // deliberately broken variant
  std::string description;
  std::function<std::unique_ptr<Subject>()> make;
  // Set by the adapter registration (adapters/adapter.h): the technique
  // family ("pbcomb", "friedman", ...), Ferrite's own or a competitor's, and
  // whether the variant is a correct ablation (e.g. "correct-no-elim").
  std::string family;
  bool ferrite = false;
  bool ablation = false;
  // Persistency models (crash/model.h) the variant claims (a broken one: is
  // caught under); empty = the write-back models (crash::writeback_model_names()).
  std::vector<std::string> models;
  // Campaigns use a pool of at least this many bytes (CampaignConfig::
  // pool_size is raised to it): structures whose allocators take a slab per
  // thread and size class (byte strings) need more than the default 1 MiB.
  std::size_t min_pool_size = 0;
};

// Global registry (crash/registry.cc). Registration at static-init time.
std::vector<SubjectInfo>& subjects();
bool register_subject(SubjectInfo info);
const SubjectInfo* find_subject(const std::string& structure, const std::string& variant);

}  // namespace ferrite::crash
