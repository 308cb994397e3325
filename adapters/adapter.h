// adapters/adapter.h — one adapter per technique, registered once.
//
// The crash campaigns (`ferrite crashtest`), the benchmark (`ferrite bench`)
// and the tour see a structure only through its adapter: a traits struct
// that says how to create it, attach to it after a restart, run one
// operation of Ferrite's vocabulary (ferrite/op.h), recover an operation
// pending at a crash, and observe its abstract state. One registration line
//
//   FERRITE_REGISTER_ADAPTER(PBQueueAdapter<0>,
//       {.technique = "pb-queue", .family = "pbcomb", .origin = Origin::kFerrite,
//        .description = "PBqueue (PBcomb Alg. 5-7)"});
//
// builds from it both the crash::Subject and the bench::Instance, and puts
// it in crashtest, bench and the tour. Adding a structure is one header (the
// algorithm, include/ferrite/<technique>/) plus one adapter file here.
//
// The traits struct A:
//   using Handle = ...;                       // owns an attached structure (movable)
//   static constexpr op::Abstract kAbstract;  // its sequential specification
//   static constexpr bool kDetectable;        // recover() answers pending ops
//   static Handle create(pmem::Pool* pool, const Setup& s);  // pool is null when
//                                                            // Registration::needs_pool is false
//   static Handle attach(pmem::Pool& pool, const Setup& s);  // after a restart; the pool has
//                                                            // already recovered itself
//   static op::Response apply(Handle& h, int tid, std::uint64_t seq, const op::Op& o);
//   static op::Response recover(Handle& h, int tid, std::uint64_t seq, const op::Op& o);
//                                             // detectable techniques only
//   static std::vector<std::int64_t> observe(Handle& h);     // crash-tested techniques only
// Optional:
//   static double combining_degree(const Handle& h);
//   static void thread_init(Handle& h, int tid); static void thread_exit(Handle& h, int tid);
//   static op::Op next_op(int tid, std::uint64_t& rng, Workload& w);  // else the abstract
//                                                            // structure's default workload
//   static constexpr int kReattachEvery = n;  // single-threaded campaigns drop the handle and
//                                             // re-attach before every n-th operation (a
//                                             // restart at a quiescent point)
//   static constexpr bool kBuffered = true;   // buffered durable linearizability (nbMontage)
//   static crash::RegionSpec region_spec();   // operations are regions with their own sequential
//                                             // semantics: checked for failure atomicity
//
// Live blocks are not the adapter's business: the structure's root type
// registers its recovery hook with the pool (pmem/root_registry.h), and
// Pool::recover() rebuilds the heap from every root's trace, so two
// structures share a pool safely.
//
// Thread safety: registration runs at static initialization; the built
// Subject/Instance follow crash/subject.h and bench/technique.h.
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ferrite/crash/subject.h"
#include "ferrite/op.h"
#include "ferrite/pmem/pool.h"
#include "technique.h"

namespace ferrite::adapters {

// Who wrote the technique: Ferrite's own techniques are compared against
// the competitors in every report (never guessed from a name prefix).
enum class Origin { kFerrite, kCompetitor, kTransient, kReference };

// What a technique is created with.
struct Setup {
  std::string name = "subject";  // root name in the pool
  int threads = 1;               // per-thread slots (thread ids in [0, threads))
  std::size_t value_size = 8;    // payload bytes per element (bench)
  // bench map workloads: 8 (the operation's key as is) or 32 (Key32::from of
  // it, ferrite/key32.h); only registrations with wide_keys take 32.
  std::size_t key_size = 8;
  int heap_capacity = 512;       // bounded heaps: keys (crash workloads never fill 512)
  std::string pool_dir = "/dev/shm";  // techniques with files of their own (PMDK)
  std::uint64_t prefill = 0;     // bench: elements inserted before timing (bounded structures)
  std::uint64_t key_range = 0;   // bench set/map workloads: keys in [1, key_range] (0: not a keyed run)
  // bench: each worker calls sync after every `sync_every` of its operations
  // (0: never). A technique that persists in the background (nbMontage's
  // epoch advancer) runs without that background work when this is set:
  // its syncs alone persist, as in the nbMontage paper's §5.3.
  std::uint64_t sync_every = 0;
  // Byte-string structures: key and value sizes (crash/subject.h DataSizes;
  // `crashtest --key-size/--value-size`); 0..0: value_size/key_size above,
  // as the bench gives them. Read through bytes_codec.h.
  crash::DataSizes sizes;
};

struct Registration {
  std::string technique;            // bench name of the main technique: "pb-stack", "lock-persist"
  std::string subject;              // crash structure name ("" = technique)
  std::string variant = "correct";  // "correct", or the ablation's / broken variant's short name
  std::string family;               // "pbcomb", "pwfcomb", "friedman", "transient", ...
  Origin origin = Origin::kFerrite;
  bool broken = false;    // a needed persistence step removed: campaigns must catch it
  bool ablation = false;  // a correct variant without one optimisation (no-elim, no-rec)
  std::string description;
  bool bench = true;   // registered with `ferrite bench` (never for broken variants)
  // Bench (map and set techniques): the technique answers the vocabulary
  // with the structure's semantics (a get hits iff its key is present, at
  // most the key range is present). False for a workload driven through the
  // map vocabulary whose answers are its own (the logging array swap, where
  // every index is always present, and TPC-C New-Order): it is timed like a
  // map, and the harness's map-semantics checks skip it.
  bool map_semantics = true;
  // Bench (maps): takes 32-byte keys (Setup::key_size 32, `--key-size 32`);
  // the harness refuses the option for a technique without it.
  bool wide_keys = false;
  // Bench and crash (maps and queues of byte strings): keys and values are
  // byte strings of any size (Setup::key_size / value_size exactly, through
  // bytes_codec.h); `--key-size` of any size selects these techniques.
  bool byte_strings = false;
  bool crash = true;   // registered with `ferrite crashtest` (never for transient techniques)
  // Crash campaigns: the pool is at least this large (crash::SubjectInfo::
  // min_pool_size; per-thread slabs of many size classes need room).
  std::size_t crash_pool_size = 0;
  bool needs_pool = true;                   // bench: give create() a fresh Ferrite pool
  std::size_t pool_size = std::size_t{256} << 20;  // bench pool bytes
  // Persistency models (crash/model.h) under which the crash campaigns must
  // hold (a broken variant: be caught). Empty: every model. A structure
  // correct under x86 only says {"x86"} here.
  std::vector<std::string> models;
};

// A broken variant that the x86 model legitimately accepts (the step it
// removes is implied there by a fence or by per-line store order): the
// campaigns expect it caught under the abstract model only, and its
// description says why.
inline Registration abstract_only(Registration r, const char* why) {
  r.models = {"abstract"};
  r.description += std::string(" [caught under the abstract model only: ") + why + "]";
  return r;
}

// Every registration, in order (for listings and the docs).
struct Registered {
  Registration reg;
  op::Abstract abstract;
  bool detectable;
  std::string bench_name;     // technique[-variant] for ablations
  std::string crash_variant;  // correct | correct-<variant> | <variant>
};
const std::vector<Registered>& registrations();

// --------------------------------------------------------------- workloads
// Default workloads of the crash campaigns, per abstract structure:
// deterministic in the campaign's rng; values unique per thread (the fast
// checkers need distinct values): (tid + 1) << 32 | per-thread counter.
struct Workload {
  std::vector<std::uint64_t> next;
  // Keys (elements, items) are drawn from [1, key_range]; 0: the crash
  // campaigns' small ranges (16 keys: inserts, removes and lookups meet).
  // Set by crash::Subject::size_for_bench (the timing model's traces).
  std::uint64_t key_range = 0;
  std::uint64_t keys() const { return key_range > 0 ? key_range : 16; }
  void reset(int threads) { next.assign(static_cast<std::size_t>(threads), 0); }
  std::int64_t unique(int tid) {
    const auto n = ++next[static_cast<std::size_t>(tid)];
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(tid) + 1) << 32 | n);
  }
  static std::uint64_t step(std::uint64_t& rng) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 33;
  }
  op::Op next_op(op::Abstract a, int tid, std::uint64_t& rng);
};

// ------------------------------------------------------------ the builders
namespace internal {

template <class A>
concept HasCombiningDegree = requires(const typename A::Handle& h) { A::combining_degree(h); };
template <class A>
concept HasThreadHooks = requires(typename A::Handle& h) {
  A::thread_init(h, 0);
  A::thread_exit(h, 0);
};
template <class A>
concept HasNextOp = requires(std::uint64_t& rng, Workload& w) { A::next_op(0, rng, w); };
template <class A>
constexpr int reattach_every() {
  if constexpr (requires { A::kReattachEvery; }) return A::kReattachEvery;
  else return 0;
}
template <class A>
concept HasRegionSpec = requires { A::region_spec(); };
template <class A>
constexpr bool buffered() {
  if constexpr (requires { A::kBuffered; }) return A::kBuffered;
  else return false;
}

template <class A>
concept HasGroups = requires(typename A::Handle& h, const std::vector<crash::Op>& ops) {
  A::apply_group(h, 0, std::uint64_t{0}, ops);
};

template <class A>
class Subject final : public crash::Subject {
 public:
  crash::Spec spec() const override { return A::kAbstract; }
  bool groups() const override { return HasGroups<A>; }
  void apply_group(int tid, std::uint64_t seq, const std::vector<crash::Op>& ops) override {
    if constexpr (HasGroups<A>) A::apply_group(*h_, tid, seq, ops);
    else crash::Subject::apply_group(tid, seq, ops);
  }
  bool detectable() const override { return A::kDetectable; }
  bool buffered() const override { return internal::buffered<A>(); }
  const crash::RegionSpec* regions() const override {
    if constexpr (HasRegionSpec<A>) {
      static const crash::RegionSpec spec = A::region_spec();
      return &spec;
    } else {
      return nullptr;
    }
  }

  void set_data_sizes(const crash::DataSizes& sizes) override { setup_.sizes = sizes; }
  void create(pmem::Pool& pool, int threads) override {
    pool_ = &pool;
    setup_.threads = threads;
    ops_ = 0;
    work_.reset(threads);
    h_ = std::make_unique<typename A::Handle>(A::create(&pool, setup_));
  }
  crash::Response apply(int tid, std::uint64_t seq, const crash::Op& o) override {
    if constexpr (reattach_every<A>() > 0) {
      if (setup_.threads == 1 && ++ops_ % reattach_every<A>() == 0) reattach(*pool_);
    }
    return A::apply(*h_, tid, seq, o);
  }
  void recover(pmem::Pool& pool, int threads) override {
    // CRASH: the handle belongs to the crashed run's DRAM (this child is
    // the restarted machine): it is abandoned, never touched or destroyed.
    (void)h_.release();
    pool_ = &pool;
    setup_.threads = threads;
    // A fresh process (the campaign's restarted machine) never ran create():
    // the workload's per-thread counters start over (post-recovery ops).
    if (work_.next.size() != static_cast<std::size_t>(threads)) work_.reset(threads);
    h_ = std::make_unique<typename A::Handle>(A::attach(pool, setup_));
  }
  bool has_structure(pmem::Pool& pool) override { return pool.has_root(setup_.name); }
  bool size_for_bench(std::uint64_t key_range) override {
    setup_.key_range = key_range;
    work_.key_range = key_range;
    return true;
  }
  crash::Response recover_op(int tid, std::uint64_t seq, const crash::Op& o) override {
    if constexpr (A::kDetectable) return A::recover(*h_, tid, seq, o);
    else throw std::logic_error("recover_op on a technique that is not detectable");
  }
  std::vector<std::int64_t> observe() override { return A::observe(*h_); }
  crash::Op next_op(int tid, std::uint64_t& rng) override {
    if constexpr (HasNextOp<A>) return A::next_op(tid, rng, work_);
    else return work_.next_op(A::kAbstract, tid, rng);
  }

 private:
  void reattach(pmem::Pool& pool) { h_ = std::make_unique<typename A::Handle>(A::attach(pool, setup_)); }

  pmem::Pool* pool_ = nullptr;
  Setup setup_;
  std::uint64_t ops_ = 0;
  Workload work_;
  std::unique_ptr<typename A::Handle> h_;
};

template <class A>
class Instance final : public bench::Instance {
 public:
  Instance(pmem::Pool* pool, const Setup& s) : bench::Instance(A::kAbstract), h_(A::create(pool, s)) {}
  void thread_init(int tid) override {
    if constexpr (HasThreadHooks<A>) A::thread_init(h_, tid);
  }
  void thread_exit(int tid) override {
    if constexpr (HasThreadHooks<A>) A::thread_exit(h_, tid);
  }
  op::Response apply(int tid, std::uint64_t seq, const op::Op& o) override { return A::apply(h_, tid, seq, o); }
  double combining_degree() const override {
    if constexpr (HasCombiningDegree<A>) return A::combining_degree(h_);
    else return 0.0;
  }

 private:
  typename A::Handle h_;
};

// Shared by every registration (adapters/registry.cc).
bool add(Registration r, op::Abstract abstract, bool detectable, bool persistent, bool buffered,
         std::function<std::unique_ptr<crash::Subject>()> make_subject,
         bench::Technique::MakeFn make_instance);

}  // namespace internal

template <class A>
bool register_adapter(Registration r) {
  const bool persistent = r.origin != Origin::kTransient;
  std::function<std::unique_ptr<crash::Subject>()> subject;
  if constexpr (requires(typename A::Handle& h) { A::observe(h); })
    subject = [] { return std::unique_ptr<crash::Subject>(new internal::Subject<A>()); };
  bench::Technique::MakeFn instance = [](const bench::RunParams& p, pmem::Pool* pool) {
    Setup s;
    s.name = "bench";
    s.threads = p.max_threads > p.threads ? p.max_threads : p.threads;
    s.value_size = p.value_size;
    s.key_size = p.key_size;
    s.heap_capacity = p.heap_capacity;
    s.pool_dir = p.pool_dir;
    s.prefill = p.prefill;
    s.key_range = p.key_range;
    s.sync_every = p.sync_every;
    return std::unique_ptr<bench::Instance>(new internal::Instance<A>(pool, s));
  };
  return internal::add(std::move(r), A::kAbstract, A::kDetectable, persistent, internal::buffered<A>(),
                       std::move(subject), std::move(instance));
}

// A transient (volatile) technique's common traits: a container behind a
// unique_ptr made by Ops::make(setup); nothing to attach to after a restart.
template <class T, op::Abstract A, class Ops>
struct TransientTraits {
  using Handle = std::unique_ptr<T>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = false;
  static Handle create(pmem::Pool*, const Setup& s) { return Ops::make(s); }
  static Handle attach(pmem::Pool&, const Setup&) {
    throw std::logic_error("a transient technique has nothing to attach to");
  }
};

// ----------------------------------------------- small helpers for adapters
inline std::int64_t double_bits(double d) { return std::bit_cast<std::int64_t>(d); }
inline double bits_double(std::int64_t b) { return std::bit_cast<double>(b); }
[[noreturn]] inline void unsupported(const char* who, const op::Op& o) {
  throw std::invalid_argument(std::string(who) + ": unsupported operation '" +
                              std::string(op::kind_name(o.kind)) + "'");
}

}  // namespace ferrite::adapters

#define FERRITE_ADAPTER_CAT2(a, b) a##b
#define FERRITE_ADAPTER_CAT(a, b) FERRITE_ADAPTER_CAT2(a, b)
// FERRITE_REGISTER_ADAPTER(Traits, {designated Registration fields}) or
// FERRITE_REGISTER_ADAPTER(Traits, a_function_returning_a_Registration(...)).
#define FERRITE_REGISTER_ADAPTER(A, ...)                                       \
  static const bool FERRITE_ADAPTER_CAT(ferrite_adapter_reg_, __COUNTER__) = \
      ::ferrite::adapters::register_adapter<A>(::ferrite::adapters::Registration(__VA_ARGS__))
