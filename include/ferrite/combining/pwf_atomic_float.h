// ferrite/combining/pwf_atomic_float.h — PWFAtomicFloat: the paper's
// AtomicFloat benchmark object on PWFcomb (structure "pwfcomb-float").
//
// Paper: PBcomb/PWFcomb (PPoPP'22) §6 (AtomicFloat), Algorithms 3–4.
// State: one double v (initially 1.0, common with PBAtomicFloat). mul(k):
// v := v * k, returns the old v. read(): a wait-free validated snapshot.
//
// Thread safety: mul/recover/read are safe from distinct thread ids: mul/read
// take ids in [0, threads) of the attach, recover_* any id below the capacity
// n it was created for (attach asks for any 1..n threads; PWFcomb's "Thread
// capacity").
// Invariants and persistence: those of PWFcomb (pwfcomb.h); the whole state is
// inside the StateRec, so there is nothing else to persist.
// Recovery: attach() (durable linearizability); recover(tid, seq, k) for an
// operation pending at the crash (Alg. 3 l.4–7).
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "ferrite/combining/atomic_float.h"
#include "ferrite/combining/pwfcomb.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/thread_registry.h"
#include "ferrite/pmem/root_registry.h"

namespace ferrite::combining {

struct PWFFloatObject {
  static constexpr std::size_t kStateWords = 1;
  static constexpr std::size_t kFixedWords = 1;
  static constexpr bool kSeqTags = false;
  std::size_t used_state_words(const std::uint64_t*) const { return 1; }
  bool combine(int, std::uint64_t* st, std::span<PWFEntry> batch, const PWFValidator&) {
    double v = std::bit_cast<double>(st[0]);
    for (auto& e : batch) e.ret = AtomicFloatObject::apply_one(v, static_cast<OpCode>(e.kind), e.arg);
    st[0] = std::bit_cast<std::uint64_t>(v);
    return true;
  }
  void persist_side(int) {}
  void on_commit(int) {}
  void on_abort(int) {}
};

struct PWFFloatRoot {
  static constexpr std::uint32_t kTypeTag = 0x50574646;  // "PWFF"
  static constexpr std::uint32_t kTypeVersion = 2;  // v2: PWFCombLayout holds StateRec pointers
  static constexpr const char* kTypeName = "combining::PWFAtomicFloat";
  PWFCombLayout comb;
  explicit PWFFloatRoot(const PWFCombLayout& l) : comb(l) {}
};

template <unsigned kFaults = pwf_fault::kNone>
class PWFAtomicFloat {
 public:
  using Comb = PWFComb<PWFFloatObject, kFaults>;

  static std::unique_ptr<PWFAtomicFloat> create(pmem::Pool& pool, std::string_view name, int threads = kDefaultThreads,
                                                PWFOptions opts = {}) {
    PWFCombLayout l;
    const std::uint64_t init = std::bit_cast<std::uint64_t>(AtomicFloatObject::kInitial);
    Comb::create_layout(pool, threads, &l, &init);
    auto* root = pool.create_root<PWFFloatRoot>(name, l);
    return std::unique_ptr<PWFAtomicFloat>(new PWFAtomicFloat(pool, root, threads, opts));
  }
  // Re-attaches after a restart. Frees nothing: the pool recovered the heap
  // when it opened (recover_root).
  static std::unique_ptr<PWFAtomicFloat> attach(pmem::Pool& pool, std::string_view name, int threads = kAsCreated,
                                                PWFOptions opts = {}) {
    auto* root = pool.root<PWFFloatRoot>(name);
    return std::unique_ptr<PWFAtomicFloat>(new PWFAtomicFloat(pool, root, threads, opts));
  }
  // PWFFloatRoot's recover hook (pmem/root_registry.h): marks the StateRecs,
  // from the root alone. Nothing to repair.
  static void recover_root(pmem::Pool& pool, PWFFloatRoot* root, const std::function<void(void*)>& mark) {
    // The constructor validates the layout (magic, capacity, sizes, every
    // StateRec pointer a heap block start in the pool, S naming a record):
    // the state is one self-contained word, nothing else is followed.
    PWFAtomicFloat(pool, root, pwf_capacity(root->comb, 1), PWFOptions{}).trace(mark);
  }

  double mul(int tid, std::uint64_t seq, double k) {
    return std::bit_cast<double>(
        comb_.apply(tid, seq, static_cast<std::int32_t>(OpCode::kMul), std::bit_cast<std::int64_t>(k)));
  }
  double recover_mul(int tid, std::uint64_t seq, double k) {
    return std::bit_cast<double>(
        comb_.recover(tid, seq, static_cast<std::int32_t>(OpCode::kMul), std::bit_cast<std::int64_t>(k)));
  }
  // A read through the combining protocol (linearizable, detectable; it
  // consumes a seq like any operation).
  double read(int tid, std::uint64_t seq) {
    return std::bit_cast<double>(comb_.apply(tid, seq, static_cast<std::int32_t>(OpCode::kRead), 0));
  }
  double recover_read(int tid, std::uint64_t seq) {
    return std::bit_cast<double>(comb_.recover(tid, seq, static_cast<std::int32_t>(OpCode::kRead), 0));
  }
  // A wait-free validated snapshot (no seq, no combining round).
  double read() const {
    std::vector<std::uint64_t> st;
    comb_.snapshot(&st);
    return std::bit_cast<double>(st[0]);
  }
  void trace(const std::function<void(void*)>& mark) const { comb_.for_each_record(mark); }
  double combining_degree() const { return comb_.combining_degree(); }
  Comb& comb() { return comb_; }

  // ---- with a thread handle (sync::ThreadRegistry; no seq kept by the
  // caller: durably linearizable, not detectable — see ferrite/detectable.h)
  double mul(const Thread& t, double k) { return mul(t.id(), comb_.fresh_seq(t.id()), k); }
  double read(const Thread& t) { return read(t.id(), comb_.fresh_seq(t.id())); }

  // ---- the vocabulary of ferrite/op.h (Detectable<S>, adapters) ----
  // One convention for every PB and PWF structure: apply runs an op::Op with
  // the caller's seq; recover answers the same response for an operation
  // pending at a crash, completing it if it had not taken effect.
  op::Response apply(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind == op::kMul) return op::Response::of(std::bit_cast<std::int64_t>(mul(tid, seq, std::bit_cast<double>(o.arg))));
    if (o.kind == op::kRead) return op::Response::of(std::bit_cast<std::int64_t>(read(tid, seq)));
    unsupported_op("PWFAtomicFloat", o);
  }
  op::Response recover(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind == op::kMul) return op::Response::of(std::bit_cast<std::int64_t>(recover_mul(tid, seq, std::bit_cast<double>(o.arg))));
    if (o.kind == op::kRead) return op::Response::of(std::bit_cast<std::int64_t>(recover_read(tid, seq)));
    unsupported_op("PWFAtomicFloat", o);
  }

 private:
  PWFAtomicFloat(pmem::Pool& pool, PWFFloatRoot* root, int n, PWFOptions opts)
      : comb_(pool, &root->comb, n, obj_, opts) {}
  PWFFloatObject obj_;
  Comb comb_;
};

// The pool's recover hook for PWFFloatRoot (fault-independent trace).
inline const bool kPWFFloatRootRegistered =
    pmem::register_root_type<PWFFloatRoot>(&PWFAtomicFloat<>::recover_root);

}  // namespace ferrite::combining
