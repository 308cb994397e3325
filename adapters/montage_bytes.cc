// adapters/montage_bytes.cc — nbMontage's byte-string hash map
// (include/ferrite/montage/bytes_hash_map.h: the split-ordered table over
// payloads {key length, value length, key, value}) and its broken variants.
//
// Each workload key k and value v become byte strings bytes::encode_key(k)
// / encode_value(v) (adapters/bytes_codec.h) whose sizes are drawn from the
// campaign's `--key-size A..B --value-size A..B` (defaults here: keys 1..64,
// values 8..512 bytes, so campaigns exercise real sizes; a bench run's
// --value-size N other than 8 gives fixed N-byte values). What get, put's
// and erase's old values and observe read back is decoded with
// decode_key/decode_value: any byte mismatch, and any payload that fails
// validation (the read throws), is bytes::kCorrupt, which no workload
// writes, so the checker reports it. Buffered durably linearizable; the
// crash workload is the nbMontage maps' (montage_map.h): 4 keys, 40% put,
// 30% erase, 20% get, 10% sync. Epochs as in montage_queue.cc: only on sync
// under the simulator.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapter.h"
#include "bytes_codec.h"
#include "montage_common.h"
#include "ferrite/montage/bytes_hash_map.h"

namespace adapter_montage_bytes {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::montage;
namespace fb = ferrite::adapters::bytes;
namespace mf = ferrite::montage::fault;
namespace op = ferrite::op;

// The sizes this adapter encodes with (see the file comment).
fa::Setup with_sizes(const fa::Setup& s) { return fb::with_sizes(s, {1, 64}, {8, 512}); }

template <unsigned F>
struct MontageBytes {
  using Map = fm::BytesHashMap<F>;
  struct Handle {
    std::unique_ptr<Map> m;
    fa::Setup setup;  // the sizes keys and values are encoded with
  };
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;
  static constexpr bool kDetectable = false;
  static constexpr bool kBuffered = true;

  static ferrite::MapOptions options(const fa::Setup& s) {
    ferrite::MapOptions o;
    o.threads = s.threads;
    o.buckets = 2;  // the crash workload's 4 keys resize it (max load 2)
    return o;
  }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return {Map::create(*pool, s.name, options(s), fa::montage_epoch_options(*pool, s)), with_sizes(s)};
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return {Map::attach(pool, s.name, options(s), fa::montage_epoch_options(pool, s)), with_sizes(s)};
  }
  // A value read back: its decoded integer, kCorrupt for a byte mismatch or
  // a payload that fails validation (lengths that do not add up to its
  // block); a full pool is an error.
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    return fb::map_apply(*h.m, tid, o, h.setup, "montage-bytes-hashmap");
  }
  // Reads only: every (key, value) decoded, sorted by the decoded key (the
  // checker's map state); a damaged payload is one (kCorrupt, kCorrupt).
  static std::vector<std::int64_t> observe(Handle& h) {
    std::vector<std::pair<std::int64_t, std::int64_t>> kv;
    try {
      for (const auto& [k, v] : h.m->contents()) kv.emplace_back(fb::decode_key(k, h.setup), fb::decode_value(v, h.setup));
    } catch (const ferrite::pmem::PoolError&) {
      kv.emplace_back(fb::kCorrupt, fb::kCorrupt);
    }
    return fb::sorted_pairs(std::move(kv));
  }
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

// Campaign pools of 8 MiB: each thread takes a 64 KiB slab per size class it
// uses, and values of 1..4096 bytes span dozens of classes (a 1 MiB pool has
// 15 chunks).
constexpr std::size_t kCampaignPool = std::size_t{8} << 20;

fa::Registration broken(const char* variant, const char* why) {
  return {.technique = "montage-bytes-hashmap", .variant = variant, .family = "montage",
          .origin = fa::Origin::kFerrite, .broken = true, .description = why, .crash_pool_size = kCampaignPool};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(MontageBytes<mf::kNone>,
                         fa::Registration{.technique = "montage-bytes-hashmap", .family = "montage",
                                          .origin = fa::Origin::kFerrite,
                                          .description = "nbMontage hash map of byte-string keys and values (the "
                                                         "split-ordered table over {key length, value length, key, "
                                                         "value} payloads; DISC'21)",
                                          .byte_strings = true, .crash_pool_size = kCampaignPool,
                                          .pool_size = std::size_t{1} << 30});
FERRITE_REGISTER_ADAPTER(MontageBytes<mf::kNoPayloadWriteback>,
                         broken("no-payload-writeback",
                                "the to-be-persisted buffers write back a payload's header line only: its epoch "
                                "becomes durable with the key and value bytes still in the cache"));
FERRITE_REGISTER_ADAPTER(MontageBytes<mf::kFreeOnDetach>,
                         broken("free-on-detach",
                                "a removed or replaced payload is returned to the allocator at once, not through "
                                "pdelete's epoch delay (recovery may still need it)"));

}  // namespace adapter_montage_bytes
