// adapters/mirror_bytes_hashmap.cc — mirror-bytes-hashmap: Mirror's hash
// table of Harris lists with byte-string keys and values
// (include/ferrite/mirror/bytes_map.h), durably linearizable.
//
//   correct                volatile replica in DRAM (the paper's main mode)
//   correct-nvm-replica    both replicas in the pool (§6.3; an ablation)
//   broken variants:
//     payload-no-fence       a replace's value CAS without the psync that
//                            orders the new payload's write-backs first
//     recover-no-mark-values the pool recovery hook marks key payloads only
//                            (pool recovery frees every live value)
//   (internal/faults.h). The third payload fault, kPayloadFreeNow (a
//   replaced value freed at once instead of through EBR), is a concurrency
//   bug no crash image shows: tests/mirror/mirror_bytes_stress_test.cc.
//
// Each workload key k and value v become bytes::encode_key(k) /
// encode_value(v) (adapters/bytes_codec.h), sizes from the campaign's
// `--key-size A..B --value-size A..B`, else keys 1..64 and values 8..512
// bytes (a bench run's fixed --value-size N gives N-byte values). Every
// value read back (get, put's and erase's old values, observe) is decoded
// byte for byte; a mismatch, and a read that throws (a payload failing
// validation), is bytes::kCorrupt, which the checker reports. observe()
// only reads. Buckets: 2 (the campaigns' 16 keys meet in two lists).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "adapter.h"
#include "bytes_codec.h"
#include "ferrite/mirror/bytes_map.h"
#include "ferrite/mirror/internal/faults.h"

namespace adapter_mirror_bytes_hashmap {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fb = ferrite::adapters::bytes;
namespace fm = ferrite::mirror;
namespace op = ferrite::op;

// The campaign's ranges, or this adapter's defaults (see the file comment).
fa::Setup sized(const fa::Setup& s) { return fb::with_sizes(s, {1, 64}, {8, 512}); }

template <class C>
struct MirrorBytes {
  using Map = fm::BytesHashMap<C>;
  struct Handle {
    std::unique_ptr<Map> m;
    fa::Setup setup;
  };
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;
  static constexpr bool kDetectable = false;
  static constexpr int kReattachEvery = 9;  // Mirror's recovery in the runner (as mirror-hashmap)

  static ferrite::MapOptions options(const fa::Setup& s) {
    ferrite::MapOptions o;
    o.threads = s.threads;
    o.buckets = s.key_range == 0 ? 2 : s.key_range;
    return o;
  }
  static std::size_t region(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    const std::size_t want = s.key_range == 0 ? std::size_t{128} << 10
                                              : 64 * (2 * static_cast<std::size_t>(s.key_range) +
                                                      64 * static_cast<std::size_t>(s.threads) * 1024);
    return std::min(want, pool.size() / 8);
  }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return {Map::create(*pool, s.name, options(s), region(*pool, s)), sized(s)};
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return {Map::attach(pool, s.name, options(s)), sized(s)};
  }
  // CRASH: a payload failing validation (a torn or freed block) reads as a
  // corrupt value, which the checker reports; a full pool is an error.
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    return fb::map_apply(*h.m, tid, o, h.setup, "mirror-bytes-hashmap");
  }
  // Reads only. A payload that throws is (kCorrupt, kCorrupt).
  static std::vector<std::int64_t> observe(Handle& h) {
    std::vector<std::pair<std::int64_t, std::int64_t>> kv;
    auto& pool = h.m->pool();
    h.m->for_each_entry([&](std::uint64_t k, std::uint64_t v) {
      try {
        kv.emplace_back(fb::decode_key(ferrite::pmem::read_payload(pool, k), h.setup),
                        fb::decode_value(ferrite::pmem::read_payload(pool, v), h.setup));
      } catch (const ferrite::pmem::PoolError&) {
        kv.emplace_back(fb::kCorrupt, fb::kCorrupt);
      }
    });
    return fb::sorted_pairs(std::move(kv));
  }
};

using Dram = fm::Config<fm::InDram>;
using Nvm = fm::Config<fm::InPool>;
template <unsigned F>
using DramF = fm::Config<fm::InDram, F>;
namespace fi = fm::internal;

fa::Registration reg(const char* variant, bool broken, bool ablation, const char* description) {
  return fa::Registration{.technique = "mirror-bytes-hashmap",
                          .variant = variant,
                          .family = "mirror",
                          .origin = fa::Origin::kFerrite,
                          .broken = broken,
                          .ablation = ablation,
                          .description = description,
                          .bench = !broken,
                          .byte_strings = true,
                          // 4 MiB campaign pools: payloads take a chunk per
                          // thread and size class (2 threads fill 1 MiB).
                          .crash_pool_size = std::size_t{4} << 20,
                          .pool_size = std::size_t{1} << 30};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(MirrorBytes<Dram>,
                         reg("correct", false, false,
                             "hash table of Harris lists + Mirror (PLDI'21), byte-string keys and values in pool "
                             "payloads, volatile replica in DRAM"));
FERRITE_REGISTER_ADAPTER(MirrorBytes<Nvm>, reg("nvm-replica", false, true,
                                               "byte-string Mirror hash map, both replicas in the pool (§6.3)"));
FERRITE_REGISTER_ADAPTER(MirrorBytes<DramF<fi::kPayloadNoFence>>,
                         reg("payload-no-fence", true, false,
                             "a replace publishes the new value's offset (Fig. 4 CAS) with no psync after "
                             "write_payload's write-backs"));
FERRITE_REGISTER_ADAPTER(MirrorBytes<DramF<fi::kRecoverNoMarkValues>>,
                         reg("recover-no-mark-values", true, false,
                             "the pool recovery hook marks key payloads only: live values are freed and reused"));

}  // namespace adapter_mirror_bytes_hashmap
