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

// Sorts recovered payloads by key (the ordered maps' rebuilds). Each key is
// read once, in the scan's (slab) order, and (key, payload) pairs are
// sorted in DRAM: a comparator reading the keys from the pool costs two
// random pool accesses per comparison.
inline void sort_by_key(std::vector<PBlk*>& kept) {
  std::vector<std::pair<std::int64_t, PBlk*>> keyed;
  keyed.reserve(kept.size());
  for (PBlk* p : kept) keyed.emplace_back(static_cast<const KV*>(p->data())->key, p);
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < keyed.size(); ++i) kept[i] = keyed[i].second;
}

}  // namespace ferrite::montage::internal
