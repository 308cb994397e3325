// ferrite/montage/internal/kv_payload.h — the payload block of nbMontage's
// maps (hash_map.h, bst.h, skiplist.h, split_ordered.h). Not API.
//
// Every map keeps one payload per key: {key, value}, then value_bytes - 8
// bytes of padding (0x5a), so a benchmark can size values like the papers'
// (the value is the first 8 bytes). A payload is immutable once its
// operation's lin_CAS publishes it (nbMontage constraint 3); only payloads
// persist, the maps' nodes are DRAM index rebuilt by recovery.
#pragma once

#include <cstdint>
#include <cstring>

#include "ferrite/montage/epoch_sys.h"

namespace ferrite::montage::internal {

struct KV {
  std::int64_t key;
  std::int64_t value;  // followed by value_bytes - 8 bytes of padding
};

// The payload's size for values of value_bytes (>= 8; 8 if smaller).
constexpr std::size_t kv_payload_bytes(std::size_t value_bytes) {
  return sizeof(KV) + (value_bytes > 8 ? value_bytes - 8 : 0);
}

// A new payload of `bytes` (kv_payload_bytes) holding {key, value}: the
// caller's own until the lin_CAS that tags it (Fig. 7: pnew outside the
// operation's retry loop; it is filled before any CAS can publish it).
template <class Sys>
PBlk* new_kv(Sys& es, int tid, std::size_t bytes, std::int64_t key, std::int64_t value) {
  PBlk* p = es.pnew_bytes(tid, bytes);
  auto& kv = es.template own<KV>(tid, p);
  kv.key = key;
  kv.value = value;
  if (bytes > sizeof(KV)) std::memset(static_cast<char*>(p->data()) + sizeof(KV), 0x5a, bytes - sizeof(KV));
  return p;
}

}  // namespace ferrite::montage::internal
