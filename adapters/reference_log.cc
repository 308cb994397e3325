// adapters/reference_log.cc — the reference structure of the crash pipeline
// (adapters/plog.h, the worked example of docs/crash.md): a correct variant
// and three deliberately broken ones. Crash campaigns only.
#include "adapter.h"
#include "plog.h"

namespace adapter_reference_log {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace op = ferrite::op;
using ferrite::examples::PLog;

template <PLog::Flaw kFlaw>
struct ReferenceLog {
  using Handle = PLog*;
  static constexpr op::Abstract kAbstract = op::Abstract::kLog;
  static constexpr bool kDetectable = true;

  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) { return pool->create_root<PLog>(s.name); }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    PLog* log = pool.root<PLog>(s.name);
    log->recover();
    return log;
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind != op::kAppend) fa::unsupported("reference-log", o);
    return op::Response::of(static_cast<std::int64_t>(h->append(tid, seq, o.arg, kFlaw)));
  }
  static op::Response recover(Handle& h, int tid, std::uint64_t seq, const op::Op& o) {
    return op::Response::of(static_cast<std::int64_t>(h->recover_append(tid, seq, o.arg, kFlaw)));
  }
  static std::vector<std::int64_t> observe(Handle& h) { return h->entries(); }
};

fa::Registration variant(const char* v, bool broken, const char* desc) {
  return {.technique = "reference-log", .variant = v, .family = "reference", .origin = fa::Origin::kReference,
          .broken = broken, .description = desc, .bench = false};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(ReferenceLog<PLog::Flaw::kNone>,
                         variant("correct", false, "persistent append log: record, pwb, pfence, count, pwb, psync"));
FERRITE_REGISTER_ADAPTER(ReferenceLog<PLog::Flaw::kNoPfence>,
                         variant("no-pfence", true, "no pfence between the record's pwb and the count's store"));
FERRITE_REGISTER_ADAPTER(ReferenceLog<PLog::Flaw::kNoPsync>,
                         variant("no-psync", true, "append returns before the count is durable"));
FERRITE_REGISTER_ADAPTER(ReferenceLog<PLog::Flaw::kNoRecordPwb>,
                         variant("no-record-pwb", true, "the record is never written back"));

}  // namespace adapter_reference_log
