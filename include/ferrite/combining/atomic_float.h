// ferrite/combining/atomic_float.h — the AtomicFloat sequential object (the
// PBcomb/PWFcomb paper's synthetic benchmark, §6) and PBAtomicFloat, a
// detectably recoverable AtomicFloat on PBcomb (structure "pbcomb-float").
//
// Sequential object. State: one double v (initially 1.0). mul(k) sets
// v := v * k and returns the old v; read() returns v. Responses are the
// double's bit pattern in the response word. `AtomicFloatObject` is
// protocol-neutral (no persistence of its own), so the PWF helper may reuse
// it: apply_one() is the whole sequential semantics.
//
// Thread safety: PBAtomicFloat::mul/read are safe from distinct thread ids
// in [0, threads) of the attach; recover takes any id below the capacity n
// it was created for (attach asks for any 1..n threads; PBcomb's "Thread
// capacity").
// Persistence: everything is in the StateRec (state self-contained); PBcomb
// persists it (Alg. 2 l.22–27). Recovery: the pool keeps the two StateRecs
// when it opens (PBAtomicFloatRoot's registered hook, recover_root), then
// attach (durable linearizability; it frees nothing);
// recover(tid, seq, op, k) for a pending operation (Alg. 1 l.3–6).
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ferrite/combining/pbcomb.h"
#include "ferrite/combining/validate.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/thread_registry.h"
#include "ferrite/pmem/root_registry.h"

namespace ferrite::combining {

struct AtomicFloatObject {
  static constexpr TagKind kTag = TagKind::kBit;
  static constexpr double kInitial = 1.0;

  std::size_t state_bytes() const { return sizeof(double); }
  std::size_t used_bytes(const void*) const { return sizeof(double); }
  void init_state(void* st) const { *static_cast<double*>(st) = kInitial; }

  static std::uint64_t apply_one(double& v, OpCode op, std::int64_t arg) {
    const double old = v;
    if (op == OpCode::kMul) v = old * std::bit_cast<double>(arg);
    return std::bit_cast<std::uint64_t>(old);  // kMul and kRead: the value read
  }
  void simulate(void* st, const Active* a, std::size_t k, std::uint64_t* resp, int) {
    double v = *static_cast<double*>(st);
    for (std::size_t i = 0; i < k; ++i) resp[i] = apply_one(v, a[i].op, a[i].arg);
    *static_cast<double*>(st) = v;
  }
  bool before_persist(void*, int) { return false; }
  void after_durable(void*, int) {}
};

struct PBAtomicFloatRoot {
  static constexpr std::uint32_t kTypeTag = 0x50424146;  // "PBAF"
  static constexpr std::uint32_t kTypeVersion = 5;  // v5: the state checksummed as a sum of per-word terms; v4: eight-chain record checksum; v3: (ReturnVal, tag) pairs after the state; v2: round stamps
  static constexpr const char* kTypeName = "combining::PBAtomicFloat";
  PBCombRoot comb;
  explicit PBAtomicFloatRoot(const PBCombRoot& c)
      : comb(c.rec[0], c.rec[1], c.rec_bytes, c.threads, c.state_bytes,
             static_cast<TagKind>(c.tag_kind), c.design) {}
};

template <unsigned Faults = kNoFaults>
class PBAtomicFloat {
 public:
  using Comb = PBComb<AtomicFloatObject, Faults>;

  // Creates the persistent object under `name` for `threads` threads.
  static std::unique_ptr<PBAtomicFloat> create(pmem::Pool& pool, std::string_view name,
                                               int threads = kDefaultThreads, int alloc_tid = 0) {
    if (threads <= 0) throw std::invalid_argument("PBAtomicFloat: threads must be > 0");
    AtomicFloatObject obj;
    const RecLayout l = Comb::layout_for(obj, threads);
    void* r0 = pool.heap().alloc(record_block_bytes(l.total()), alloc_tid);
    void* r1 = pool.heap().alloc(record_block_bytes(l.total()), alloc_tid);
    Comb::format(obj, threads, r0, r1);
    auto* root = pool.create_root<PBAtomicFloatRoot>(
        name, PBCombRoot(r0, r1, l.total(), static_cast<std::uint32_t>(threads),
                         static_cast<std::uint32_t>(l.state_bytes), AtomicFloatObject::kTag, Comb::kDesign));
    return std::unique_ptr<PBAtomicFloat>(new PBAtomicFloat(pool, root, threads));
  }
  // Re-attaches (after a restart: this is the whole structure-level
  // recovery; the pool recovered the heap when it opened). Frees nothing.
  static std::unique_ptr<PBAtomicFloat> attach(pmem::Pool& pool, std::string_view name, int threads = kAsCreated) {
    auto* root = pool.root<PBAtomicFloatRoot>(name);
    // A pool opened without recovery ran no hook: validate before the
    // combiner reads a record (recover_root).
    pbcomb_checked_state(Damage{pool, "PBAtomicFloat"}, root->comb);
    return std::unique_ptr<PBAtomicFloat>(new PBAtomicFloat(pool, root, threads));
  }

  // PBAtomicFloatRoot's recover hook (pmem/root_registry.h): keeps the two
  // StateRecs; nothing to repair.
  // Validating (combining/validate.h): the PBcomb root and its records
  // (in the pool, heap blocks of rec_bytes, one verifies) before anything
  // is marked; damage throws PoolError(kCorrupt) naming the offset.
  static void recover_root(pmem::Pool& pool, PBAtomicFloatRoot* root, const std::function<void(void*)>& mark) {
    pbcomb_checked_state(Damage{pool, "PBAtomicFloat"}, root->comb);
    pbcomb_mark_records(root->comb, mark);
    mark(root);
  }

  // v := v * k; returns the old v.
  double mul(int tid, std::uint64_t seq, double k) {
    return std::bit_cast<double>(comb_.apply(tid, seq, OpCode::kMul, std::bit_cast<std::int64_t>(k)));
  }
  double mul(int tid, double k) {
    return std::bit_cast<double>(comb_.apply(tid, OpCode::kMul, std::bit_cast<std::int64_t>(k)));
  }
  double read(int tid, std::uint64_t seq) {
    return std::bit_cast<double>(comb_.apply(tid, seq, OpCode::kRead, 0));
  }
  // Detectable recovery of the pending operation (op = kMul or kRead).
  double recover(int tid, std::uint64_t seq, OpCode op, double k) {
    return std::bit_cast<double>(comb_.recover(tid, seq, op, std::bit_cast<std::int64_t>(k)));
  }
  // Quiescent read of the current value (no synchronization).
  double value() const { return *static_cast<const double*>(comb_.state()); }

  void trace(const std::function<void(void*)>& mark) const {
    mark(comb_.rec(0));
    mark(comb_.rec(1));
    mark(root_);
  }
  double combining_degree() const { return comb_.combining_degree(); }
  Comb& comb() { return comb_; }

  // ---- with a thread handle (sync::ThreadRegistry; no seq kept by the
  // caller: durably linearizable, not detectable — see ferrite/detectable.h)
  double mul(const Thread& t, double k) { return mul(t.id(), k); }
  double read(const Thread& t) { return read(t.id(), comb_.next_seq(t.id())); }

  // ---- the vocabulary of ferrite/op.h (Detectable<S>, adapters) ----
  // One convention for every PB and PWF structure: apply runs an op::Op with
  // the caller's seq; recover answers the same response for an operation
  // pending at a crash, completing it if it had not taken effect.
  op::Response apply(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind == op::kMul) return op::Response::of(std::bit_cast<std::int64_t>(mul(tid, seq, std::bit_cast<double>(o.arg))));
    if (o.kind == op::kRead) return op::Response::of(std::bit_cast<std::int64_t>(read(tid, seq)));
    unsupported_op("PBAtomicFloat", o);
  }
  op::Response recover(int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind != op::kMul && o.kind != op::kRead) unsupported_op("PBAtomicFloat", o);
    return op::Response::of(std::bit_cast<std::int64_t>(recover(tid, seq, static_cast<OpCode>(o.kind), std::bit_cast<double>(o.arg))));
  }

 private:
  PBAtomicFloat(pmem::Pool& pool, PBAtomicFloatRoot* root, int threads)
      : pool_(&pool), root_(root), comb_(&root->comb, &obj_, threads) {}

  pmem::Pool* pool_;
  PBAtomicFloatRoot* root_;
  AtomicFloatObject obj_;
  Comb comb_;
};

// The pool's recover hook for PBAtomicFloatRoot (Faults-independent).
inline const bool kPBAtomicFloatRootRegistered =
    pmem::register_root_type<PBAtomicFloatRoot>(&PBAtomicFloat<>::recover_root);

}  // namespace ferrite::combining
