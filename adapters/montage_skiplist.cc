// adapters/montage_skiplist.cc — the Herlihy–Shavit lock-free skip list on
// nbMontage (include/ferrite/montage/skiplist.h) and its broken variants, for `ferrite
// crashtest` (buffered durable linearizability) and `ferrite bench`
// (get:insert:remove mixes: insert = put, remove = erase).
//
// Values: --value-size bytes of payload (the 8-byte value first). Epochs as
// in montage_queue.cc: 10 ms in benchmarks, only on sync under the
// simulator. The crash workload is the hash map's (montage_hashmap.cc).
#include "adapter.h"
#include "montage_common.h"
#include "ferrite/montage/skiplist.h"
#include "ferrite/montage/internal/faults.h"

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::montage;
namespace op = ferrite::op;
namespace mf = fm::fault;

using fa::montage_epoch_options;
constexpr auto epoch_options = &montage_epoch_options;
fm::SkipListOptions map_options(const fa::Setup& s) {
  fm::SkipListOptions o;
  o.value_bytes = s.value_size;
  return o;
}

template <unsigned F>
struct MontageSkipList {
  using Handle = std::unique_ptr<fm::SkipList<F>>;
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;
  static constexpr bool kDetectable = false;
  static constexpr bool kBuffered = true;

  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return fm::SkipList<F>::create(*pool, s.name, s.threads, map_options(s), epoch_options(*pool));
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return fm::SkipList<F>::attach(pool, s.name, s.threads, map_options(s), epoch_options(pool));
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    switch (o.kind) {
      case op::kPut: return op::Response::from(h->put(tid, o.arg, o.arg2));
      case op::kGet: return op::Response::from(h->get(tid, o.arg));
      case op::kErase: return op::Response::from(h->erase(tid, o.arg));
      case op::kSync: h->sync(); return op::Response::ack();
      default: fa::unsupported("montage-skiplist", o);
    }
  }
  static std::vector<std::int64_t> observe(Handle& h) {
    std::vector<std::int64_t> out;
    for (const auto& [k, v] : h->contents()) {
      out.push_back(k);
      out.push_back(v);
    }
    return out;
  }
  // The crash workload: 40% put, 30% erase, 20% get over 4 keys (threads
  // meet on the same keys: replace races, doomed attempts), 10% sync.
  static op::Op next_op(int tid, std::uint64_t& rng, fa::Workload& w) {
    const auto r = fa::Workload::step(rng);
    const auto key = static_cast<std::int64_t>((r >> 4) % 4 + 1);
    const auto c = r % 10;
    if (c < 4) return {op::kPut, key, w.unique(tid)};
    if (c < 7) return {op::kErase, key, 0};
    if (c < 9) return {op::kGet, key, 0};
    return {op::kSync, 0, 0};
  }
};

fa::Registration broken(const char* variant, const char* description) {
  return {.technique = "montage-skiplist", .variant = variant, .family = "montage", .origin = fa::Origin::kFerrite,
          .broken = true, .description = description};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(MontageSkipList<mf::kNone>,
                         {.technique = "montage-skiplist", .family = "montage", .origin = fa::Origin::kFerrite,
                          .description = "Herlihy-Shavit lock-free skip list on nbMontage (logical deletion in the value word; DISC'21 §5)",
                          .pool_size = std::size_t{1} << 30});
FERRITE_REGISTER_ADAPTER(MontageSkipList<mf::kNoTbpWriteback>,
                         broken("no-tbp-writeback", "epoch advance does not write back the to-be-persisted buffers (Fig. 2 l.101 removed)"));
FERRITE_REGISTER_ADAPTER(MontageSkipList<mf::kAcceptUncommitted>,
                         broken("accept-uncommitted", "recovery keeps blocks whose descriptor says the operation did not commit (§3.4 rule 2)"));
FERRITE_REGISTER_ADAPTER(MontageSkipList<mf::kIgnoreAnti>,
                         broken("ignore-anti", "recovery ignores anti-nodes: erased and replaced values come back (§3.4 rule 3)"));
FERRITE_REGISTER_ADAPTER(MontageSkipList<mf::kRestoreBeforeReset>,
                         broken("restore-before-reset", "recovery moves the global epoch past the crashed run before its resets of the rejected blocks are durable: a crash in between, then a second recovery, revives them (§3.4; needs a crash during recovery)"));
// fault::kNoEpochRestore is not registered: recovery's durable resets of the
// blocks it rejects make the restore redundant here (docs/montage.md D14);
// the campaigns with crashes during recovery do not catch it.
