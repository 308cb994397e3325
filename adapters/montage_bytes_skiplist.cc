// adapters/montage_bytes_skiplist.cc — nbMontage's ordered map of byte
// strings (include/ferrite/montage/bytes_skip_map.h: the Herlihy–Shavit skip
// list over payloads {key length, value length, key, value}) and its broken
// variants.
//
// Keys and values are encoded as in adapters/montage_bytes.cc (bytes_codec.h:
// sizes drawn from `--key-size A..B --value-size A..B`, defaults here keys
// 1..64, values 8..512; a bench run's --value-size N other than 8 gives
// fixed N-byte values) and every byte read back is checked. The scans are
// checked too: every other get (odd sequence numbers) is a point scan
// [k, k + "\0") — which must yield key k and nothing else — and observe
// reads the state through a full scan, compared with a walk of level 0
// (contents): a scan that skips, repeats, misorders or invents a key, or a
// value that differs from the walk's, reads as bytes::kCorrupt, which no
// workload writes. Buffered durably linearizable; the crash workload is the
// byte hash map's: 4 keys, 40% put, 30% erase, 20% get, 10% sync.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapter.h"
#include "bytes_codec.h"
#include "montage_common.h"
#include "ferrite/montage/bytes_skip_map.h"

namespace adapter_montage_bytes_skiplist {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::montage;
namespace fb = ferrite::adapters::bytes;
namespace mf = ferrite::montage::fault;
namespace op = ferrite::op;

constexpr const char* kName = "montage-bytes-skiplist";

fa::Setup with_sizes(const fa::Setup& s) { return fb::with_sizes(s, {1, 64}, {8, 512}); }

template <unsigned F>
struct MontageBytesSkip {
  using Map = fm::BytesSkipMap<F>;
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
    return o;
  }
  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return {Map::create(*pool, s.name, options(s), fa::montage_epoch_options(*pool, s)), with_sizes(s)};
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return {Map::attach(pool, s.name, options(s), fa::montage_epoch_options(pool, s)), with_sizes(s)};
  }
  // A get by a point scan: the value of key k if the scan yields exactly k
  // (kCorrupt if it yields any other key, or k twice).
  static op::Response point_scan(Handle& h, int tid, std::int64_t key) {
    try {
      const std::string k = fb::encode_key(key, h.setup);
      std::string hi = k;
      hi.push_back('\0');  // the least string above k
      std::optional<std::int64_t> out;
      bool bad = false;
      h.m->scan(tid, k, hi, [&](std::string_view sk, std::string_view sv) {
        if (sk != k || out.has_value()) bad = true;
        else out = fb::decode_value(sv, h.setup);
        return true;
      });
      if (bad) return op::Response::of(fb::kCorrupt);
      return op::Response::from(out);
    } catch (const ferrite::pmem::PoolError& e) {
      if (e.code() != ferrite::pmem::Errc::kCorrupt) throw;
      return op::Response::of(fb::kCorrupt);
    }
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t seq, const op::Op& o) {
    if (o.kind == op::kGet && (seq & 1) != 0) return point_scan(h, tid, o.arg);
    return fb::map_apply(*h.m, tid, o, h.setup, kName);
  }
  // Reads only: every (key, value) of a full scan, decoded, sorted by the
  // decoded key; a scan that disagrees with the level-0 walk, out of order,
  // or a damaged payload adds one (kCorrupt, kCorrupt).
  static std::vector<std::int64_t> observe(Handle& h) {
    std::vector<std::pair<std::int64_t, std::int64_t>> kv;
    try {
      const auto walk = h.m->contents();
      std::vector<std::pair<std::string, std::string>> scanned;
      // Every encoded key starts with its integer's low byte (1..4 in the
      // crash workload, below 0xff): "\xff" bounds them all.
      h.m->scan(0, std::string_view(), "\xff", [&](std::string_view k, std::string_view v) {
        scanned.emplace_back(k, v);
        return true;
      });
      const bool ordered = std::is_sorted(scanned.begin(), scanned.end(),
                                          [](const auto& a, const auto& b) { return a.first <= b.first; }) &&
                           std::adjacent_find(scanned.begin(), scanned.end(), [](const auto& a, const auto& b) {
                             return a.first == b.first;
                           }) == scanned.end();
      for (const auto& [k, v] : scanned) kv.emplace_back(fb::decode_key(k, h.setup), fb::decode_value(v, h.setup));
      if (!ordered || scanned != walk || scanned.size() != h.m->size()) kv.emplace_back(fb::kCorrupt, fb::kCorrupt);
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

// Campaign pools of 8 MiB (as montage-bytes-hashmap: a 64 KiB slab per
// thread and size class, and wide value ranges span dozens of classes).
constexpr std::size_t kCampaignPool = std::size_t{8} << 20;

fa::Registration broken(const char* variant, const char* why) {
  return {.technique = kName, .variant = variant, .family = "montage", .origin = fa::Origin::kFerrite,
          .broken = true, .description = why, .crash_pool_size = kCampaignPool};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(MontageBytesSkip<mf::kNone>,
                         fa::Registration{.technique = kName, .family = "montage", .origin = fa::Origin::kFerrite,
                                          .description = "nbMontage ordered map of byte-string keys and values, with "
                                                         "range scans (the Herlihy-Shavit skip list over {key length, "
                                                         "value length, key, value} payloads; DISC'21)",
                                          .byte_strings = true, .crash_pool_size = kCampaignPool,
                                          .pool_size = std::size_t{1} << 30});
FERRITE_REGISTER_ADAPTER(MontageBytesSkip<mf::kNoPayloadWriteback>,
                         broken("no-payload-writeback",
                                "the to-be-persisted buffers write back a payload's header line only: its epoch "
                                "becomes durable with the key and value bytes still in the cache"));
FERRITE_REGISTER_ADAPTER(MontageBytesSkip<mf::kFreeOnDetach>,
                         broken("free-on-detach",
                                "a removed or replaced payload is returned to the allocator at once, not through "
                                "EBR and pdelete's epoch delay (recovery may still need it, a scan may still read it)"));
FERRITE_REGISTER_ADAPTER(MontageBytesSkip<mf::kAcceptUncommitted>,
                         broken("accept-uncommitted",
                                "recovery accepts a payload whose operation's descriptor never committed (§3.4 rule 2 "
                                "reduced to 'any serial number up to the descriptor's')"));

}  // namespace adapter_montage_bytes_skiplist
