// adapters/soft_hash.cc — SOFT, the lock-free durable hash table of Zuriel,
// Friedman, Sheffi, Cohen, Petrank, "Efficient Lock-Free Durable Sets"
// (OOPSLA 2019), include/ferrite/baselines/soft_hash.h, as a map and as a
// set, through the policy-set adapter (adapters/durable_sets.h):
//
//   bench technique            crash subjects (variant)                       models
//   soft-hashmap               soft-hashmap, soft-hashset (correct)           x86
//   soft-hashmap-body-first    soft-hashmap, soft-hashset (correct-body-first) abstract, x86
//
// `correct` is the paper's create (one pwb + one fence after validStart,
// key, value, validEnd in one line): it relies on stores to one line
// persisting in program order, which the x86 model keeps and the abstract
// model (8-byte tearing of a pending line) does not — claimed under x86
// only; tests/baselines/soft_hash_crash_test.cc shows the abstract model
// catching it. `correct-body-first` (an ablation: without the paper's
// single-flush create) makes the body durable before the node is linked
// and then writes validEnd alone: correct under both write-back models.
//
// Broken variants, of the body-first order so that each is caught for its
// own fault under both models (the crash tests catch each):
//   no-create-pwb              the PNode is never written back before the
//                              state becomes INSERTED (map)
//   recovery-ignores-deleted   recovery keeps PNodes whose deleted bit is
//                              set (map and set): removed keys come back
//   no-update-pwb              (map) a put on a present key publishes its
//                              value without writing the PNode's value1 back
//   no-help-create             (set) an insert that meets its key
//                              INTEND_TO_INSERT moves it to INSERTED without
//                              creating the PNode: needs 2 threads
//
// Buckets: one per key of the bench's key range (load factor 1, as the
// other hash maps); 1 in crash campaigns, so threads meet in one list.
// Crash workload: 2 keys (durable_sets.h). Values are 8 bytes
// (--value-size ignored, as for the Harris-list maps).
#include <cstdint>
#include <memory>
#include <string_view>

#include "adapter.h"
#include "durable_sets.h"
#include "ferrite/baselines/soft_hash.h"

namespace adapter_soft_hash {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace fs = ferrite::baselines::soft;
namespace op = ferrite::op;

// The "policy" PolicySet is templated on: the create order and the faults.
template <fs::Order O, unsigned F = fs::internal::kNoFaults>
struct SoftP {
  static constexpr bool kDurable = true;
  static constexpr fs::Order kOrder = O;
  static constexpr unsigned kFaults = F;
};

struct Soft {
  template <class P>
  using Structure = fb::SoftHashTable<P::kOrder, P::kFaults>;
  static constexpr const char* kName = "soft hash table";
  static constexpr std::int64_t kCrashKeys = 2;
  static std::uint64_t buckets(const fa::Setup& s) { return s.key_range == 0 ? 1 : s.key_range; }
  // Crash campaigns (no key range): 4 KiB slabs (63 PNodes), so zeroing a
  // slab is 64 crash points, not 1,024; benchmarks: 64 KiB.
  static std::size_t slab_bytes(const fa::Setup& s) {
    return s.key_range == 0 ? std::size_t{4096} : fb::soft::kDefaultSlabBytes;
  }
  template <class P>
  static std::unique_ptr<Structure<P>> create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return Structure<P>::create(*pool, s.name, s.threads, buckets(s), slab_bytes(s));
  }
  template <class P>
  static std::unique_ptr<Structure<P>> attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return Structure<P>::attach(pool, s.name, s.threads);
  }
};

template <class P>
using Map = fa::PolicySet<Soft, P, op::Abstract::kMap>;
template <class P>
using Set = fa::PolicySet<Soft, P, op::Abstract::kSet>;
using OneFlush = SoftP<fs::Order::kOneFlush>;
using BodyFirst = SoftP<fs::Order::kBodyFirst>;
using NoCreatePwb = SoftP<fs::Order::kBodyFirst, fs::internal::kNoCreatePwb>;
using IgnoresDeleted = SoftP<fs::Order::kBodyFirst, fs::internal::kRecoveryIgnoresDeleted>;
using NoHelpCreate = SoftP<fs::Order::kBodyFirst, fs::internal::kNoHelpCreate>;
using NoUpdatePwb = SoftP<fs::Order::kBodyFirst, fs::internal::kNoUpdatePwb>;

fa::Registration reg(const char* subject, const char* variant, bool broken, bool ablation, const char* description) {
  auto r = fa::durable_competitor("soft-hashmap", subject, "soft", variant, broken, description);
  r.ablation = ablation;
  // The paper's single-flush create relies on per-line store order: x86 only.
  if (std::string_view(variant) == "correct") r.models = {"x86"};
  return r;
}

}  // namespace

FERRITE_REGISTER_ADAPTER(Map<OneFlush>,
                         reg("soft-hashmap", "correct", false, false,
                             "SOFT (OOPSLA'19): DRAM Harris-style lists + one PNode per key, one flush per insert/remove, "
                             "none per lookup; map updates in place (value1, per-key lock) [x86: per-line store order]"));
FERRITE_REGISTER_ADAPTER(Set<OneFlush>,
                         reg("soft-hashset", "correct", false, false,
                             "SOFT (OOPSLA'19) as a set [x86: per-line store order]"));
FERRITE_REGISTER_ADAPTER(Map<BodyFirst>,
                         reg("soft-hashmap", "body-first", false, true,
                             "SOFT with the PNode body durable before the link, then validEnd alone "
                             "(two flushes per insert; no per-line store order needed)"));
FERRITE_REGISTER_ADAPTER(Set<BodyFirst>,
                         reg("soft-hashset", "body-first", false, true,
                             "SOFT as a set, PNode body durable before the link"));
FERRITE_REGISTER_ADAPTER(Map<NoCreatePwb>,
                         reg("soft-hashmap", "no-create-pwb", true, false,
                             "create() does not write the PNode back before the state becomes INSERTED"));
FERRITE_REGISTER_ADAPTER(Map<IgnoresDeleted>,
                         reg("soft-hashmap", "recovery-ignores-deleted", true, false,
                             "recovery keeps PNodes whose deleted bit is set (validStart == validEnd suffices)"));
FERRITE_REGISTER_ADAPTER(Set<IgnoresDeleted>,
                         reg("soft-hashset", "recovery-ignores-deleted", true, false,
                             "recovery keeps PNodes whose deleted bit is set (validStart == validEnd suffices)"));
FERRITE_REGISTER_ADAPTER(Set<NoHelpCreate>,
                         reg("soft-hashset", "no-help-create", true, false,
                             "an insert that finds its key INTEND_TO_INSERT moves it to INSERTED without creating the PNode"));
FERRITE_REGISTER_ADAPTER(Map<NoUpdatePwb>,
                         reg("soft-hashmap", "no-update-pwb", true, false,
                             "a put on a present key publishes its value without writing value1 back"));

}  // namespace adapter_soft_hash
