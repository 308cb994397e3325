// Bench registrations of the persistent competitors (include/ferrite/
// baselines/, docs/baselines.md):
//   queue:        izraelevitz-ms, friedman-durable, friedman-log, fc-inplace,
//                 lock-persist, pmdk-tx
//   stack:        izraelevitz-treiber, fc-inplace, lock-persist, pmdk-tx
//   heap:         fc-inplace, lock-persist, pmdk-tx
//   atomic-float: fc-inplace, lock-persist, pmdk-tx
// pmdk-tx persists through PMDK's own flushes: Ferrite's pwb/pfence/psync
// counters do not see them (they read 0 for pmdk-tx; the description says
// so). It needs no Ferrite pool (its pmemobj pool file lives in pool_dir).
#include <bit>
#include <cstdint>
#include <memory>

#include "ferrite/baselines/fc_inplace.h"
#include "ferrite/baselines/friedman.h"
#include "ferrite/baselines/izraelevitz.h"
#include "ferrite/baselines/lock_persist.h"
#include "ferrite/baselines/pmdk_tx.h"
#include "ferrite/baselines/seq_objects.h"
#include "ferrite/pmem/pool.h"
#include "technique.h"

namespace {

namespace fbn = ferrite::bench;
namespace fb = ferrite::baselines;
using ferrite::pmem::Pool;
using fbn::Structure;

constexpr const char* kName = "bench";

int slots(const fbn::RunParams& p) { return p.max_threads > p.threads ? p.max_threads : p.threads; }

fb::SeqParams seq_params(const fbn::RunParams& p) {
  return {slots(p), p.value_size, p.heap_capacity};
}

// atomic-float: the factor travels as the double's bits.
std::int64_t float_arg(Structure s, std::int64_t v) {
  return s == Structure::kAtomicFloat ? std::bit_cast<std::int64_t>(fbn::atomic_float_factor(v)) : v;
}

class IzQueueInstance final : public fbn::Instance {
 public:
  IzQueueInstance(const fbn::RunParams& p, Pool* pool) : q_(*pool, kName, slots(p), p.value_size) {}
  void insert(int tid, std::uint64_t, std::int64_t v) override { q_.enqueue(tid, v); }
  bool remove(int tid, std::uint64_t, std::int64_t* out) override { return q_.try_dequeue(tid, out); }

 private:
  fb::IzraelevitzQueue<> q_;
};

class IzStackInstance final : public fbn::Instance {
 public:
  IzStackInstance(const fbn::RunParams& p, Pool* pool) : s_(*pool, kName, slots(p), p.value_size) {}
  void insert(int tid, std::uint64_t, std::int64_t v) override { s_.push(tid, v); }
  bool remove(int tid, std::uint64_t, std::int64_t* out) override { return s_.try_pop(tid, out); }

 private:
  fb::IzraelevitzStack<> s_;
};

template <bool kLog>
class FriedmanInstance final : public fbn::Instance {
 public:
  FriedmanInstance(const fbn::RunParams& p, Pool* pool) : q_(*pool, kName, slots(p), p.value_size) {}
  void insert(int tid, std::uint64_t seq, std::int64_t v) override { q_.enqueue(tid, seq, v); }
  bool remove(int tid, std::uint64_t seq, std::int64_t* out) override { return q_.try_dequeue(tid, seq, out); }

 private:
  fb::FriedmanQueue<kLog> q_;
};

template <class Seq>
class LockInstance final : public fbn::Instance {
 public:
  LockInstance(const fbn::RunParams& p, Pool* pool, Structure s) : o_(*pool, kName, seq_params(p)), s_(s) {}
  void insert(int tid, std::uint64_t, std::int64_t v) override {
    std::int64_t ignored;
    o_.apply(tid, true, float_arg(s_, v), &ignored);
  }
  bool remove(int tid, std::uint64_t, std::int64_t* out) override { return o_.apply(tid, false, 0, out); }

 private:
  fb::LockPersist<Seq> o_;
  Structure s_;
};

template <class Seq>
class FcInstance final : public fbn::Instance {
 public:
  FcInstance(const fbn::RunParams& p, Pool* pool, Structure s) : o_(*pool, kName, seq_params(p)), s_(s) {}
  void insert(int tid, std::uint64_t seq, std::int64_t v) override {
    std::int64_t ignored;
    o_.apply(tid, seq, true, float_arg(s_, v), &ignored);
  }
  bool remove(int tid, std::uint64_t seq, std::int64_t* out) override { return o_.apply(tid, seq, false, 0, out); }
  double combining_degree() const override { return o_.combining_degree(); }

 private:
  fb::FcInplace<Seq> o_;
  Structure s_;
};

class PmdkInstance final : public fbn::Instance {
 public:
  PmdkInstance(const fbn::RunParams& p, Structure s)
      : o_(p.pool_dir, kind(s), p.value_size, p.heap_capacity), s_(s) {}
  void insert(int, std::uint64_t, std::int64_t v) override {
    std::int64_t ignored;
    o_.apply(true, float_arg(s_, v), &ignored);
  }
  bool remove(int, std::uint64_t, std::int64_t* out) override { return o_.apply(false, 0, out); }

 private:
  static fb::PmdkTx::Kind kind(Structure s) {
    switch (s) {
      case Structure::kStack: return fb::PmdkTx::Kind::kStack;
      case Structure::kQueue: return fb::PmdkTx::Kind::kQueue;
      case Structure::kHeap: return fb::PmdkTx::Kind::kHeap;
      default: return fb::PmdkTx::Kind::kFloat;
    }
  }
  fb::PmdkTx o_;
  Structure s_;
};

template <class I>
auto maker() {
  return [](const fbn::RunParams& p, Pool* pool) -> std::unique_ptr<fbn::Instance> {
    return std::make_unique<I>(p, pool);
  };
}
template <template <class> class I, class Seq>
auto seq_maker(Structure s) {
  return [s](const fbn::RunParams& p, Pool* pool) -> std::unique_ptr<fbn::Instance> {
    return std::make_unique<I<Seq>>(p, pool, s);
  };
}
auto pmdk_maker(Structure s) {
  return [s](const fbn::RunParams& p, Pool*) -> std::unique_ptr<fbn::Instance> {
    return std::make_unique<PmdkInstance>(p, s);
  };
}

constexpr const char* kPmdkNote = " (PMDK flushes itself: pwb/pfence/psync NOT counted, read 0)";

}  // namespace

FERRITE_REGISTER_TECHNIQUE({"izraelevitz-ms", Structure::kQueue, true,
                            "MS queue + Izraelevitz DISC'16 transform (pwb+psync after every shared access)",
                            maker<IzQueueInstance>()});
FERRITE_REGISTER_TECHNIQUE({"izraelevitz-treiber", Structure::kStack, true,
                            "Treiber stack + Izraelevitz DISC'16 transform", maker<IzStackInstance>()});
FERRITE_REGISTER_TECHNIQUE({"friedman-durable", Structure::kQueue, true,
                            "Friedman et al. PPoPP'18 durable queue", maker<FriedmanInstance<false>>()});
FERRITE_REGISTER_TECHNIQUE({"friedman-log", Structure::kQueue, true,
                            "Friedman et al. PPoPP'18 log queue (detectable)", maker<FriedmanInstance<true>>()});

FERRITE_REGISTER_TECHNIQUE({"lock-persist", Structure::kStack, true, "mutex + in-place persistent stack",
                            seq_maker<LockInstance, fb::SeqStack<>>(Structure::kStack)});
FERRITE_REGISTER_TECHNIQUE({"lock-persist", Structure::kQueue, true, "mutex + in-place persistent queue",
                            seq_maker<LockInstance, fb::SeqQueue<>>(Structure::kQueue)});
FERRITE_REGISTER_TECHNIQUE({"lock-persist", Structure::kHeap, true,
                            "mutex + in-place persistent heap (per-op redo log)",
                            seq_maker<LockInstance, fb::SeqHeap<>>(Structure::kHeap)});
FERRITE_REGISTER_TECHNIQUE({"lock-persist", Structure::kAtomicFloat, true, "mutex + in-place persistent float",
                            seq_maker<LockInstance, fb::SeqFloat<>>(Structure::kAtomicFloat), true,
                            std::size_t{16} << 20});

FERRITE_REGISTER_TECHNIQUE({"fc-inplace", Structure::kStack, true,
                            "flat combining, persisted announcements, in-place updates (DFC-like, no elimination)",
                            seq_maker<FcInstance, fb::SeqStack<>>(Structure::kStack)});
FERRITE_REGISTER_TECHNIQUE({"fc-inplace", Structure::kQueue, true,
                            "flat combining, persisted announcements, in-place updates",
                            seq_maker<FcInstance, fb::SeqQueue<>>(Structure::kQueue)});
FERRITE_REGISTER_TECHNIQUE({"fc-inplace", Structure::kHeap, true,
                            "flat combining, persisted announcements, in-place heap (redo log per op)",
                            seq_maker<FcInstance, fb::SeqHeap<>>(Structure::kHeap)});
FERRITE_REGISTER_TECHNIQUE({"fc-inplace", Structure::kAtomicFloat, true,
                            "flat combining, persisted announcements, in-place float",
                            seq_maker<FcInstance, fb::SeqFloat<>>(Structure::kAtomicFloat), true,
                            std::size_t{16} << 20});

FERRITE_REGISTER_TECHNIQUE({"pmdk-tx", Structure::kStack, true,
                            std::string("PMDK libpmemobj transaction per op + mutex") + kPmdkNote,
                            pmdk_maker(Structure::kStack), false});
FERRITE_REGISTER_TECHNIQUE({"pmdk-tx", Structure::kQueue, true,
                            std::string("PMDK libpmemobj transaction per op + mutex") + kPmdkNote,
                            pmdk_maker(Structure::kQueue), false});
FERRITE_REGISTER_TECHNIQUE({"pmdk-tx", Structure::kHeap, true,
                            std::string("PMDK libpmemobj transaction per op + mutex") + kPmdkNote,
                            pmdk_maker(Structure::kHeap), false});
FERRITE_REGISTER_TECHNIQUE({"pmdk-tx", Structure::kAtomicFloat, true,
                            std::string("PMDK libpmemobj transaction per op + mutex") + kPmdkNote,
                            pmdk_maker(Structure::kAtomicFloat), false});
