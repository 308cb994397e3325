// adapters/registry.cc — the one registration: an adapter joins the crash
// subjects and the bench techniques here, and the default crash workloads.
#include <bit>
#include <stdexcept>

#include "adapter.h"

namespace ferrite::adapters {

namespace {
std::vector<Registered>& all() {
  static std::vector<Registered> v;
  return v;
}
}  // namespace

const std::vector<Registered>& registrations() { return all(); }

op::Op Workload::next_op(op::Abstract a, int tid, std::uint64_t& rng) {
  const auto r = step(rng);
  switch (a) {
    case op::Abstract::kQueue:
      return r % 2 == 0 ? op::Op{op::kEnqueue, unique(tid), 0} : op::Op{op::kDequeue, 0, 0};
    case op::Abstract::kStack:
      return r % 2 == 0 ? op::Op{op::kPush, unique(tid), 0} : op::Op{op::kPop, 0, 0};
    case op::Abstract::kPriorityQueue: {
      const auto c = r % 20;
      if (c < 10) {
        // Unique keys, not in insertion order (heap order gets exercised).
        const auto v = static_cast<std::uint64_t>(unique(tid));
        const auto key = static_cast<std::int64_t>((v & 0xffffffff) * 7919 % 1000003 * 256 + (v >> 32));
        return {op::kInsert, key, 0};
      }
      if (c < 17) return {op::kDeleteMin, 0, 0};
      return {op::kGetMin, 0, 0};
    }
    case op::Abstract::kRegister: {
      static constexpr double kFactors[] = {2.0, 0.5, 3.0, 0.25, 1.5};
      if (r % 8 == 0) return {op::kRead, 0, 0};
      return {op::kMul, std::bit_cast<std::int64_t>(kFactors[r % 5]), 0};
    }
    case op::Abstract::kLog:
      return {op::kAppend, unique(tid), 0};
    case op::Abstract::kSet: {
      // A small key range, so inserts, removes and lookups meet (keys()).
      const auto key = static_cast<std::int64_t>((r >> 4) % keys() + 1);
      const auto c = r % 10;
      if (c < 4) return {op::kInsert, key, 0};
      if (c < 8) return {op::kRemove, key, 0};
      return {op::kContains, key, 0};
    }
    case op::Abstract::kMap: {
      const auto key = static_cast<std::int64_t>((r >> 4) % keys() + 1);
      const auto c = r % 10;
      if (c < 4) return {op::kPut, key, unique(tid)};
      if (c < 7) return {op::kErase, key, 0};
      return {op::kGet, key, 0};
    }
  }
  throw std::logic_error("Workload::next_op: unknown abstract structure");
}

namespace internal {

bool add(Registration r, op::Abstract abstract, bool detectable, bool persistent, bool buffered,
         std::function<std::unique_ptr<crash::Subject>()> make_subject,
         bench::Technique::MakeFn make_instance) {
  if (r.technique.empty()) throw std::logic_error("adapter registration without a technique name");
  if (r.broken && r.ablation) throw std::logic_error(r.technique + ": a variant is broken or an ablation, not both");
  Registered reg{r, abstract, detectable, r.technique, "correct"};
  const bool is_correct = r.variant == "correct";
  if (!is_correct && !r.broken && !r.ablation)
    throw std::logic_error(r.technique + "/" + r.variant + ": a named variant must be broken or an ablation");
  if (r.ablation) {
    reg.bench_name = r.technique + "-" + r.variant;
    reg.crash_variant = "correct-" + r.variant;
  } else if (r.broken) {
    reg.crash_variant = r.variant;
  }
  const std::string subject = r.subject.empty() ? r.technique : r.subject;
  const bool ferrite = r.origin == Origin::kFerrite;

  if (r.crash && persistent) {
    if (!make_subject) throw std::logic_error(r.technique + ": crash-tested adapters need observe()");
    crash::SubjectInfo info{subject, reg.crash_variant, r.broken, r.description, std::move(make_subject)};
    info.family = r.family;
    info.ferrite = ferrite;
    info.ablation = r.ablation;
    info.models = r.models;
    info.min_pool_size = r.crash_pool_size;
    crash::register_subject(std::move(info));
  }
  if (r.bench && !r.broken) {
    bench::Technique t{reg.bench_name, abstract, persistent, r.description, std::move(make_instance),
                       r.needs_pool, r.pool_size};
    t.family = r.family;
    t.ferrite = ferrite;
    t.ablation = r.ablation;
    t.map_semantics = r.map_semantics;
    t.wide_keys = r.wide_keys;
    t.byte_strings = r.byte_strings;
    t.buffered = buffered;
    bench::register_technique(std::move(t));
  }
  all().push_back(std::move(reg));
  return true;
}

}  // namespace internal
}  // namespace ferrite::adapters
