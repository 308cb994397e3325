// ferrite/montage/internal/kv_payload.h — the payload block of nbMontage's
// maps (hash_map.h, bst.h, skiplist.h, split_ordered.h). Not API.
//
// Every map keeps one payload per key: {key, value}, then value_bytes - 8
// bytes of padding (0x5a); the key is 8 bytes, or 32 for the hash map's
// byte-string keys (KVOf<Key32>), so a benchmark can size values like the papers'
// (the value is the first 8 bytes). A payload is immutable once its
// operation's lin_CAS publishes it (nbMontage constraint 3); only payloads
// persist, the maps' nodes are DRAM index rebuilt by recovery.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferrite/montage/epoch_sys.h"

namespace ferrite::montage::internal {

// K: the key, std::int64_t or a trivially copyable byte-string key
// (ferrite/key32.h: the hash map's 32-byte keys, `ferrite bench --key-size`).
template <class K>
struct KVOf {
  K key;
  std::int64_t value;  // followed by value_bytes - 8 bytes of padding
};
using KV = KVOf<std::int64_t>;

// The payload's size for values of value_bytes (>= 8; 8 if smaller).
template <class K = std::int64_t>
constexpr std::size_t kv_payload_bytes(std::size_t value_bytes) {
  return sizeof(KVOf<K>) + (value_bytes > 8 ? value_bytes - 8 : 0);
}

// A new payload of `bytes` (kv_payload_bytes) holding {key, value}: the
// caller's own until the lin_CAS that tags it (Fig. 7: pnew outside the
// operation's retry loop; it is filled before any CAS can publish it).
// Sys: EpochSys (a PBlk in the pool) or TransientSys (a block in DRAM).
template <class Sys, class K>
typename Sys::Blk* new_kv(Sys& es, int tid, std::size_t bytes, const K& key, std::int64_t value) {
  typename Sys::Blk* p = es.pnew_bytes(tid, bytes);
  auto& kv = es.template own<KVOf<K>>(tid, p);
  kv.key = key;
  kv.value = value;
  if (bytes > sizeof(KVOf<K>))
    std::memset(static_cast<char*>(p->data()) + sizeof(KVOf<K>), 0x5a, bytes - sizeof(KVOf<K>));
  return p;
}

// The key/value policy of a map templated on its payload (split_ordered.h):
// what a node keeps of the key, what a value is, how a payload is made and
// read. KVPolicy<K>: fixed-size keys (std::int64_t, Key32) and int64 values
// in a KVOf<K> payload; KVPolicy<Bytes> (internal/bytes_payload.h): byte
// strings of any size.
template <class K>
struct KVPolicy {
  static constexpr bool kBytes = false;
  using Key = K;               // what a DRAM node holds and the operations take
  using Value = std::int64_t;  // what get returns
  static constexpr std::size_t payload_bytes(std::size_t value_bytes) { return kv_payload_bytes<K>(value_bytes); }
  template <class Sys>
  static typename Sys::Blk* make(Sys& es, int tid, std::size_t bytes, const Key& key, Value value) {
    return new_kv(es, tid, bytes, key, value);
  }
  // The key a new node holds (the caller's: a copy).
  template <class Blk>
  static Key node_key(const Key& key, const Blk*) {
    return key;
  }
  template <class Sys>
  static Key key_of(const typename Sys::Blk* p) {
    return Sys::template get<KVOf<K>>(p).key;
  }
  template <class Sys>
  static Value value_of(const typename Sys::Blk* p) {
    return Sys::template get<KVOf<K>>(p).value;
  }
};

// ---------------------------------------------------------------------
// Recovery's parallel index rebuilds (EpochOptions::recovery_threads).
// Nothing else runs during a rebuild; the threads write DRAM only.

// What runs in parallel, and what does not. The recovery threads share the
// scan (epoch_sys.h), the sorts (sorted_in_parts) and the hash map's
// linking; the DRAM nodes are allocated by the calling thread alone. A
// second thread allocating a million small nodes gets a fresh glibc arena,
// which grows 128 KiB at a time (an mprotect each) and faults its pages in
// while the other thread faults its own. Measured on this project's 2-core
// VM (pool on 2 MiB pages, 1 GiB live, R=2; docs/results.md "Recovery at
// stop 34"): nodes made by one thread / by two, BST 128-133 / 178-266 ms,
// hash map 172-179 / 269-419 ms, split-ordered 297-325 / 537-566 ms.
//
// Each rebuild thread takes at least this many items: starting a thread
// costs tens of microseconds, as much as rebuilding a thousand nodes.
inline constexpr std::size_t kRebuildGrain = 1024;

// How many threads (at most `threads`, at least 1) share `n` items.
inline std::size_t rebuild_parts(std::size_t n, int threads) {
  return std::clamp<std::size_t>(n / kRebuildGrain, 1, static_cast<std::size_t>(std::max(1, threads)));
}

// fn(part) for every part in [0, parts): parts - 1 new threads and the
// caller (part 0); returns when all are done.
// ORDER: the caller's writes before the call happen before every fn (thread
// start), and every fn's writes happen before the return (join): the parts
// need no atomics as long as they write disjoint data.
template <class Fn>
void run_parts(std::size_t parts, Fn&& fn) {
  std::vector<std::thread> ts;
  ts.reserve(parts > 0 ? parts - 1 : 0);
  for (std::size_t p = 1; p < parts; ++p) ts.emplace_back([&fn, p] { fn(p); });
  if (parts > 0) fn(std::size_t{0});
  for (auto& t : ts) t.join();
}

// n items made by make(i) (i in [0, n)), sorted by `less`, in
// rebuild_parts(n, threads) threads: each makes a contiguous chunk and sorts
// it in DRAM; the chunks are then merged pairwise, the merges of one round
// in parallel. The items are values (keys copied out of the pool): a
// comparator reading keys from the pool or from nodes would cost two random
// memory accesses per comparison.
template <class T, class Make, class Less>
std::vector<T> sorted_in_parts(std::size_t n, int threads, Make make, Less less) {
  std::vector<T> v(n);
  const std::size_t parts = rebuild_parts(n, threads);
  std::vector<std::size_t> bounds(parts + 1);
  for (std::size_t i = 0; i <= parts; ++i) bounds[i] = n * i / parts;
  const auto at = [&](std::size_t i) { return v.begin() + static_cast<std::ptrdiff_t>(i); };
  run_parts(parts, [&](std::size_t part) {
    for (std::size_t i = bounds[part]; i < bounds[part + 1]; ++i) v[i] = make(i);
    std::sort(at(bounds[part]), at(bounds[part + 1]), less);
  });
  if (parts == 1) return v;
  std::vector<T> other(n);
  for (std::size_t width = 1; width < parts; width *= 2) {
    // Round `width`: runs [lo, lo + width) and [lo + width, lo + 2 width)
    // of chunks are merged into `other`; a run without a partner is copied.
    const std::size_t pairs = (parts + 2 * width - 1) / (2 * width);
    run_parts(std::min(pairs, parts), [&](std::size_t k) {
      const std::size_t lo = k * 2 * width, mid = std::min(parts, lo + width), hi = std::min(parts, lo + 2 * width);
      std::merge(at(bounds[lo]), at(bounds[mid]), at(bounds[mid]), at(bounds[hi]),
                 other.begin() + static_cast<std::ptrdiff_t>(bounds[lo]), less);
    });
    v.swap(other);
  }
  return v;
}

// The kept payloads as (key, payload) pairs sorted by key (the ordered
// maps' rebuilds), read in the scan's slab order (one sequential pass over
// the pool per thread). K: the payloads' key (KVOf<K>), std::int64_t or
// Key32.
template <class K = std::int64_t>
using KeyedOf = std::pair<K, PBlk*>;
using Keyed = KeyedOf<>;
template <class K = std::int64_t>
std::vector<KeyedOf<K>> sort_by_key(const std::vector<PBlk*>& kept, int threads) {
  using Pair = KeyedOf<K>;
  return sorted_in_parts<Pair>(
      kept.size(), threads, [&](std::size_t i) { return Pair{static_cast<const KVOf<K>*>(kept[i]->data())->key, kept[i]}; },
      [](const Pair& a, const Pair& b) { return a.first < b.first; });
}

// A key as text, for recovery's errors: the number, or the key's bytes in
// hex.
inline std::string key_text(std::string_view key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char ch : key.substr(0, 64)) {
    const auto c = static_cast<unsigned char>(ch);
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  if (key.size() > 64) out += "... (" + std::to_string(key.size()) + " bytes)";
  return out;
}
template <class K>
std::string key_text(const K& key) {
  if constexpr (std::is_same_v<K, std::int64_t>) {
    return std::to_string(key);
  } else {
    static_assert(std::is_trivially_copyable_v<K>);
    unsigned char b[sizeof(K)];
    std::memcpy(b, &key, sizeof b);
    std::string out;
    for (const unsigned char c : b) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
    return out;
  }
}

// Throws recovery's error if `keyed` (sorted) holds a key twice: at most
// one payload per key survives the scan, anything else is a recovery bug,
// reported before any node is made.
template <class K>
void check_distinct_keys(const std::vector<KeyedOf<K>>& keyed) {
  for (std::size_t i = 1; i < keyed.size(); ++i)
    if (keyed[i].first == keyed[i - 1].first)
      throw std::runtime_error("montage: two recovered payloads for key " + key_text(keyed[i].first));
}

}  // namespace ferrite::montage::internal
