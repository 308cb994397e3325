// adapters/baseline_common.h — what the competitors' adapters share: the
// container workload (insert/remove pairs, no get-min: the competitors'
// sequential objects answer two operations) and the translation of the
// vocabulary into their insert/remove calls.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "adapter.h"
#include "ferrite/baselines/seq_objects.h"

namespace ferrite::adapters {

// 50/50 insert/remove of unique values (the competitors' crash workload).
inline op::Op pair_workload(op::Abstract a, int tid, std::uint64_t& rng, Workload& w) {
  if (Workload::step(rng) % 2 == 0) return {op::insert_kind(a), w.unique(tid), 0};
  return {op::remove_kind(a), 0, 0};
}

// `call(bool insert, std::int64_t arg, std::int64_t* out) -> bool`: the
// competitors' one entry point. Containers answer ack / value / empty; the
// register answers the old value (kMul) or the value (kRead).
template <class Call>
op::Response pair_apply(op::Abstract a, const op::Op& o, Call&& call) {
  std::int64_t v = 0;
  if (a == op::Abstract::kRegister) {
    if (o.kind != op::kMul && o.kind != op::kRead) unsupported("register", o);
    call(o.kind == op::kMul, o.arg, &v);
    return op::Response::of(v);
  }
  if (o.kind == op::insert_kind(a)) {
    call(true, o.arg, &v);
    return op::Response::ack();
  }
  if (o.kind == op::remove_kind(a)) return call(false, 0, &v) ? op::Response::of(v) : op::Response::none();
  unsupported(std::string(op::abstract_name(a)).c_str(), o);
}

// A PTM-style competitor holding one seq_objects.h object (romulus-*,
// redoopt-*): Obj(pool, name, SeqParams, region_bytes) with apply/snapshot/
// combining_degree. Its region (per copy or replica) is 1/PoolFraction of
// the pool, in whole 64 KiB chunks.
template <class Obj, op::Abstract A, std::size_t PoolFraction>
struct SeqPtm {
  using Handle = std::unique_ptr<Obj>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = false;

  static std::size_t region_bytes(const pmem::Pool& pool) {
    constexpr std::size_t kChunk = std::size_t{64} << 10;
    return std::max<std::size_t>(pool.size() / PoolFraction / kChunk, 1) * kChunk;
  }
  static Handle create(pmem::Pool* pool, const Setup& s) {
    return std::make_unique<Obj>(*pool, s.name, baselines::SeqParams{s.threads, s.value_size, s.heap_capacity},
                                 region_bytes(*pool));
  }
  static Handle attach(pmem::Pool& pool, const Setup& s) { return create(&pool, s); }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    return pair_apply(A, o, [&](bool ins, std::int64_t arg, std::int64_t* out) { return h->apply(tid, ins, arg, out); });
  }
  static std::vector<std::int64_t> observe(Handle& h) { return h->snapshot(); }
  static op::Op next_op(int tid, std::uint64_t& rng, Workload& w) {
    if constexpr (A == op::Abstract::kRegister) return w.next_op(A, tid, rng);
    else return pair_workload(A, tid, rng, w);
  }
  static double combining_degree(const Handle& h) { return h->combining_degree(); }
};

// Registrations of a competitor family: a correct one, a broken variant.
inline Registration competitor(const char* family, const char* technique, const char* description) {
  return {.technique = technique, .subject = technique, .family = family, .origin = Origin::kCompetitor,
          .description = description};
}
inline Registration broken_competitor(const char* family, const char* technique, const char* variant,
                                      const char* description) {
  return {.technique = technique, .subject = technique, .variant = variant, .family = family,
          .origin = Origin::kCompetitor, .broken = true, .description = description};
}

}  // namespace ferrite::adapters
