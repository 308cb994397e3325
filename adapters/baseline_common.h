// adapters/baseline_common.h — what the competitors' adapters share: the
// container workload (insert/remove pairs, no get-min: the competitors'
// sequential objects answer two operations) and the translation of the
// vocabulary into their insert/remove calls.
#pragma once

#include <cstdint>

#include "adapter.h"

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

}  // namespace ferrite::adapters
