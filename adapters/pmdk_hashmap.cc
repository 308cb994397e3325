// adapters/pmdk_hashmap.cc — pmdk-hashmap (include/ferrite/baselines/
// pmdk_hashmap.h): a chained hash table whose updates are PMDK libpmemobj
// transactions, behind per-stripe locks; as a set and as a map. Bench only:
// it lives in its own PMDK pool file and persists through PMDK's own
// flushes, so Ferrite's pwb/pfence/psync counters read 0 for it (the
// description says so) and the crash simulator cannot see its persistence.
#include <memory>
#include <stdexcept>

#include "adapter.h"
#include "ferrite/baselines/pmdk_hashmap.h"

namespace adapter_pmdk_hashmap {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::baselines;
namespace op = ferrite::op;

template <op::Abstract A>
struct PmdkHash {
  using Handle = std::unique_ptr<fb::PmdkHashMap>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = false;
  static Handle create(ferrite::pmem::Pool*, const fa::Setup& s) {
    // One bucket per key of the key range (load factor 1, as the other hash maps).
    return std::make_unique<fb::PmdkHashMap>(s.pool_dir, s.key_range == 0 ? 1024 : s.key_range);
  }
  static Handle attach(ferrite::pmem::Pool&, const fa::Setup&) {
    throw std::logic_error("pmdk-hashmap lives in its own PMDK pool: nothing to attach to");
  }
  static op::Response apply(Handle& h, int, std::uint64_t, const op::Op& o) {
    if constexpr (A == op::Abstract::kSet) {
      switch (o.kind) {
        case op::kInsert: return op::Response::boolean(h->insert(o.arg));
        case op::kRemove: return op::Response::boolean(h->remove(o.arg));
        case op::kContains: return op::Response::boolean(h->contains(o.arg));
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("pmdk-hashmap (set)", o);
      }
    } else {
      switch (o.kind) {
        case op::kPut: return op::Response::from(h->put(o.arg, o.arg2));
        case op::kGet: return op::Response::from(h->get(o.arg));
        case op::kErase: return op::Response::from(h->erase(o.arg));
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("pmdk-hashmap (map)", o);
      }
    }
  }
};

fa::Registration pmdk(const char* description) {
  return {.technique = "pmdk-hashmap", .family = "pmdk", .origin = fa::Origin::kCompetitor,
          .description = description, .crash = false, .needs_pool = false};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(PmdkHash<op::Abstract::kMap>,
                         pmdk("chained hash map, one PMDK libpmemobj transaction per update, 1024 lock stripes "
                              "(PMDK flushes itself: pwb/pfence/psync NOT counted, read 0)"));
FERRITE_REGISTER_ADAPTER(PmdkHash<op::Abstract::kSet>,
                         pmdk("chained hash set, one PMDK libpmemobj transaction per update, 1024 lock stripes "
                              "(PMDK flushes itself: pwb/pfence/psync NOT counted, read 0)"));

}  // namespace adapter_pmdk_hashmap
