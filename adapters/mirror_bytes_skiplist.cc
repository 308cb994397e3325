// adapters/mirror_bytes_skiplist.cc — mirror-bytes-skiplist: Mirror's
// lock-free skip list as an ordered map of byte-string keys and values
// (include/ferrite/mirror/bytes_skip_map.h), durably linearizable.
//
//   correct                volatile replica in DRAM (the paper's main mode)
//   correct-nvm-replica    both replicas in the pool (§6.3; an ablation)
//   broken variants (include/ferrite/mirror/internal/faults.h):
//     payload-no-fence       a replace's value CAS without the psync that
//                            orders the new payload's write-backs first (the
//                            payload is published before its write-back)
//     recover-no-mark-values the pool recovery hook marks key payloads only
//     recover-no-mark-keys   the pool recovery hook marks value payloads only
//   The payload freed while still reachable (kPayloadFreeNow: a replaced
//   value freed at once, not through EBR) is a concurrency bug no crash
//   image shows; tests/mirror/mirror_bytes_skip_stress_test.cc catches it.
//
// Keys and values: bytes::encode_key / encode_value (adapters/bytes_codec.h),
// sizes from the campaign's `--key-size A..B --value-size A..B`, else keys
// 1..64 and values 8..512 bytes (a bench run's fixed sizes exactly). Every
// value read back is decoded byte for byte; a mismatch or a read that throws
// (a payload failing validation) is bytes::kCorrupt, which the checker
// reports.
//
// Scans are checked against the model too: half of the gets (by the
// operation's sequence number) are answered by a point scan [k, k + "\0")
// — exactly key k in std::string_view order — so the checker checks scan's
// answers as linearizable gets; and observe() reads the whole map through
// scan_from(""), checking the keys strictly ascending in byte order and the
// pairs equal to the level-0 walk (for_each_entry); a disagreement is a
// (kCorrupt, kCorrupt) pair the checker reports.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapter.h"
#include "bytes_codec.h"
#include "ferrite/mirror/bytes_skip_map.h"
#include "ferrite/mirror/internal/faults.h"

namespace adapter_mirror_bytes_skiplist {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::adapters::bytes;
namespace fm = ferrite::mirror;
namespace op = ferrite::op;

fa::Setup sized(const fa::Setup& s) { return fb::with_sizes(s, {1, 64}, {8, 512}); }

template <class C>
struct MirrorBytesSkip {
  using Map = fm::BytesSkipMap<C>;
  struct Handle {
    std::unique_ptr<Map> m;
    fa::Setup setup;
  };
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;
  static constexpr bool kDetectable = false;
  // Single-threaded campaigns re-attach (Mirror's recovery on the live pool)
  // every 9 operations, as mirror-skiplist does.
  static constexpr int kReattachEvery = 9;

  static ferrite::MapOptions options(const fa::Setup& s) {
    ferrite::MapOptions o;
    o.threads = s.threads;
    return o;
  }
  // As mirror-skiplist's: 1.6 units per node on average, twice over for
  // EBR, plus per-thread slack; at most 1/8 of the pool (payloads need it).
  static std::size_t region(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    const std::size_t want = s.key_range == 0 ? std::size_t{128} << 10
                                              : 64 * (4 * static_cast<std::size_t>(s.key_range) +
                                                      64 * static_cast<std::size_t>(s.threads) * 1024);
    return std::min(want, pool.size() / 8);
  }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return {Map::create(*pool, s.name, options(s), region(*pool, s)), sized(s)};
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return {Map::attach(pool, s.name, options(s)), sized(s)};
  }
  // A get through a point scan: [k, k + "\0") holds exactly k.
  static op::Response scan_get(Handle& h, int tid, const op::Op& o) {
    try {
      const std::string k = fb::encode_key(o.arg, h.setup);
      std::optional<std::int64_t> got;
      int visited = 0;
      h.m->scan(tid, k, k + std::string(1, '\0'), [&](std::string_view key, std::string_view v) {
        ++visited;
        got = key == k ? fb::decode_value(v, h.setup) : fb::kCorrupt;
        return true;
      });
      if (visited > 1) return op::Response::of(fb::kCorrupt);
      return op::Response::from(got);
    } catch (const ferrite::pmem::PoolError& e) {
      if (e.code() != ferrite::pmem::Errc::kCorrupt) throw;
      return op::Response::of(fb::kCorrupt);
    }
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind == op::kGet && (seq + static_cast<std::uint64_t>(o.arg)) % 2 == 1) return scan_get(h, tid, o);
    return fb::map_apply(*h.m, tid, o, h.setup, "mirror-bytes-skiplist");
  }
  // Reads only (quiescent, after recovery). See the file comment.
  static std::vector<std::int64_t> observe(Handle& h) {
    auto& pool = h.m->pool();
    std::vector<std::pair<std::int64_t, std::int64_t>> kv;
    std::vector<std::pair<std::string, std::string>> walked, scanned;
    try {
      h.m->for_each_entry([&](std::uint64_t k, std::uint64_t v) {
        walked.emplace_back(ferrite::pmem::read_payload(pool, k), ferrite::pmem::read_payload(pool, v));
      });
      h.m->scan_from(0, "", [&](std::string_view k, std::string_view v) {
        scanned.emplace_back(k, v);
        return true;
      });
    } catch (const ferrite::pmem::PoolError&) {
      kv.emplace_back(fb::kCorrupt, fb::kCorrupt);
    }
    bool ordered = true;
    for (std::size_t i = 1; i < scanned.size(); ++i) ordered = ordered && scanned[i - 1].first < scanned[i].first;
    if (!ordered || scanned != walked) kv.emplace_back(fb::kCorrupt, fb::kCorrupt);
    for (const auto& [k, v] : scanned) kv.emplace_back(fb::decode_key(k, h.setup), fb::decode_value(v, h.setup));
    return fb::sorted_pairs(std::move(kv));
  }
};

using Dram = fm::Config<fm::InDram>;
using Nvm = fm::Config<fm::InPool>;
template <unsigned F>
using DramF = fm::Config<fm::InDram, F>;
namespace fi = fm::internal;

fa::Registration reg(const char* variant, bool broken, bool ablation, const char* description) {
  return fa::Registration{.technique = "mirror-bytes-skiplist",
                          .variant = variant,
                          .family = "mirror",
                          .origin = fa::Origin::kFerrite,
                          .broken = broken,
                          .ablation = ablation,
                          .description = description,
                          .bench = !broken,
                          .byte_strings = true,
                          // 4 MiB campaign pools: payloads take a chunk per
                          // thread and size class.
                          .crash_pool_size = std::size_t{4} << 20,
                          .pool_size = std::size_t{1} << 30};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(MirrorBytesSkip<Dram>,
                         reg("correct", false, false,
                             "Herlihy-Shavit skip list + Mirror (PLDI'21) as an ordered map, byte-string keys and "
                             "values in pool payloads, range scans, volatile replica in DRAM"));
FERRITE_REGISTER_ADAPTER(MirrorBytesSkip<Nvm>,
                         reg("nvm-replica", false, true,
                             "ordered byte-string Mirror skip-list map, both replicas in the pool (§6.3)"));
FERRITE_REGISTER_ADAPTER(MirrorBytesSkip<DramF<fi::kPayloadNoFence>>,
                         reg("payload-no-fence", true, false,
                             "a replace publishes the new value's offset (Fig. 4 CAS) with no psync after "
                             "write_payload's write-backs"));
FERRITE_REGISTER_ADAPTER(MirrorBytesSkip<DramF<fi::kRecoverNoMarkValues>>,
                         reg("recover-no-mark-values", true, false,
                             "the pool recovery hook marks key payloads only: live values are freed and reused"));
FERRITE_REGISTER_ADAPTER(MirrorBytesSkip<DramF<fi::kRecoverNoMarkKeys>>,
                         reg("recover-no-mark-keys", true, false,
                             "the pool recovery hook marks value payloads only: live keys are freed and reused"));

}  // namespace adapter_mirror_bytes_skiplist
