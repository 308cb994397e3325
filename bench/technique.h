// bench/technique.h — what `ferrite bench` runs.
//
// A technique is one implementation of one abstract structure (a PBqueue, a
// transient Michael–Scott queue, a PMDK-transaction queue...). Techniques are
// not registered here by hand: each comes from its adapter's one
// registration (adapters/adapter.h), which also registers its crash subject.
//
// The harness (bench/harness.h) creates one Instance per (technique, threads,
// repetition) — and, when needs_pool, a fresh pool — calls thread_init from
// every worker, runs the prefill, then times apply() calls (through
// insert/remove for the pair workloads) between two barriers, and calls
// thread_exit from every worker. seq starts at 1 and grows by one per call
// of a thread (prefill included).
// Thread safety: an Instance's apply is called concurrently from `threads`
// workers, each with its own tid in [0, threads).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferrite/op.h"
#include "ferrite/persist/persist.h"

namespace ferrite::pmem {
class Pool;
}

namespace ferrite::bench {

// The abstract structures are ferrite/op.h's (kRegister is the paper's
// AtomicFloat, named "atomic-float"; kPriorityQueue is named "heap").
using Structure = op::Abstract;
std::string structure_name(Structure s);  // "atomic-float", "stack", "queue", "heap", "set", "map", "log"
bool parse_structure(const std::string& text, Structure* out);

struct RunParams {
  int threads = 1;                 // workers in this run
  int max_threads = 8;             // upper bound over the whole bench (size per-thread slots)
  std::size_t value_size = 8;      // payload bytes per element (>= 8)
  std::size_t key_size = 8;        // map keys: 8, or 32 (Technique::wide_keys only)
  int heap_capacity = 1024;        // bounded heaps: keys
  std::uint64_t prefill = 0;       // elements inserted before timing
  std::uint64_t key_range = 0;     // set/map workloads: keys in [1, key_range] (0 otherwise)
  std::string pool_dir = "/dev/shm";
  persist::BackendConfig backend{};
  std::uint64_t seed = 1;
  // key-mix: each worker syncs after every `sync_every` of its operations
  // (0: never); a buffered technique then persists by its syncs alone
  // (adapters/adapter.h Setup::sync_every).
  std::uint64_t sync_every = 0;
};

class Instance {
 public:
  explicit Instance(Structure s) : structure_(s) {}
  virtual ~Instance() = default;
  virtual void thread_init(int /*tid*/) {}
  virtual void thread_exit(int /*tid*/) {}
  // Runs one operation of the structure's vocabulary (ferrite/op.h) as
  // thread tid with its per-thread sequence number seq.
  virtual op::Response apply(int tid, std::uint64_t seq, const op::Op& o) = 0;
  // Average requests served per combining round (0: not a combining technique).
  virtual double combining_degree() const { return 0.0; }

  // The pair workloads' two updates: push / enqueue / heap insert / set
  // insert / map put / atomic-float multiply (by atomic_float_factor(v)),
  // and pop / dequeue / delete-min / set remove / map erase (false when
  // nothing was taken; atomic-float: a read).
  void insert(int tid, std::uint64_t seq, std::int64_t v);
  bool remove(int tid, std::uint64_t seq, std::int64_t* out);
  Structure structure() const { return structure_; }

 private:
  Structure structure_;
};

// The AtomicFloat factor k an insert(tid, seq, v) multiplies by (PBcomb §6:
// read v, store v*k). Alternating just above / below 1 keeps the value
// finite over billions of operations; every technique uses this mapping.
inline double atomic_float_factor(std::int64_t v) { return (v & 1) ? 1.000000119 : 0.999999881; }

struct Technique {
  std::string name;         // unique per structure, e.g. "pb-stack", "transient-treiber"
  Structure structure;
  bool persistent;          // durable technique (crash-tested or documented otherwise)
  std::string description;
  // `pool` is a fresh Ferrite pool on params.pool_dir opened with
  // params.backend (null for transient techniques: needs_pool = false).
  using MakeFn = std::function<std::unique_ptr<Instance>(const RunParams&, pmem::Pool* pool)>;
  MakeFn make;
  bool needs_pool = true;
  std::size_t pool_size = 256u << 20;  // bytes
  // Set by the adapter registration (adapters/adapter.h), never guessed
  // from the name: the technique family ("pbcomb", "pwfcomb", "friedman",
  // "transient", ...), whether it is Ferrite's own, and whether it is an
  // ablation of another technique (e.g. pb-stack-no-elim).
  std::string family;
  bool ferrite = false;
  bool ablation = false;
  // A keyed technique whose answers follow the structure's semantics
  // (adapters/adapter.h Registration::map_semantics); false: only timed.
  bool map_semantics = true;
  // A map technique that takes 32-byte keys (RunParams::key_size 32).
  bool wide_keys = false;
  // Keys and values are byte strings of any size (RunParams::key_size and
  // value_size exactly): `--key-size N` for any N runs these.
  bool byte_strings = false;
  // Whether the technique takes keys of `key_size` bytes.
  bool takes_key_size(std::size_t key_size) const {
    return key_size == 8 || byte_strings || (key_size == 32 && wide_keys);
  }
  // Buffered durable linearizability (nbMontage): the technique answers
  // op::kSync, which makes every operation completed before it durable.
  // The others are durable at each operation and are never sent a sync.
  bool buffered = false;
};

std::vector<Technique>& techniques();
bool register_technique(Technique t);
const Technique* find_technique(Structure s, const std::string& name);

}  // namespace ferrite::bench
