// ferrite/montage/internal/bytes_payload.h — the payload of nbMontage's
// byte-string map (bytes_hash_map.h): one key and one value, each a byte
// string of 0 to pmem::kMaxPayloadBytes bytes. Not API.
//
// Layout (the PBlk's data, after its 64-byte header; PBlk::size =
// 8 + key length + value length exactly):
//
//   offset  size  field
//   0       4     key length k
//   4       4     value length v
//   8       k     the key's bytes
//   8 + k   v     the value's bytes
//
// A payload is filled by its creator before the lin_CAS that tags it and
// never written again (nbMontage constraint 3); the epoch system writes it
// back whole — header and every byte — from the to-be-persisted buffer of
// the epoch it was tagged in (epoch_sys.h P1), so it is durable before that
// epoch can be recovered. Reading validates the lengths against the block's
// size (a mismatch is a torn or foreign payload: PoolError(kCorrupt) naming
// the block); the bytes themselves are not checksummed.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "ferrite/montage/epoch_sys.h"
#include "ferrite/montage/internal/kv_payload.h"
#include "ferrite/pmem/payload.h"

namespace ferrite::montage {

// The key type that selects byte-string keys and values (KVPolicy<Bytes>).
struct Bytes {};

namespace internal {

inline constexpr std::size_t kBytesHeader = 8;  // the two lengths

// Throws PoolError(kInvalidArgument) naming the size and the limit.
inline void check_bytes_size(const char* what, std::size_t n) {
  if (n > pmem::kMaxPayloadBytes)
    throw pmem::PoolError(pmem::Errc::kInvalidArgument,
                          std::string("montage: a ") + what + " of " + std::to_string(n) +
                              " bytes is larger than the limit of " + std::to_string(pmem::kMaxPayloadBytes) +
                              " bytes (pmem::kMaxPayloadBytes)");
}

// A 63-bit hash of a byte string (payload_hash's words, then splitmix64's
// finalizer: the split order uses the low bits reversed).
inline std::uint64_t bytes_hash(std::string_view b) {
  std::uint64_t z = pmem::payload_hash(0x6b6579, b.data(), b.size());
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) & ~(std::uint64_t{1} << 63);
}

template <>
struct KVPolicy<Bytes> {
  static constexpr bool kBytes = true;
  using Key = std::string_view;    // a node's: the bytes in its payload
  using Value = std::string_view;  // in the payload: valid under the epoch pin
  static constexpr std::size_t payload_bytes(std::size_t) { return 0; }  // per put
  template <class Sys>
  static typename Sys::Blk* make(Sys& es, int tid, std::size_t, Key key, Value value) {
    check_bytes_size("key", key.size());
    check_bytes_size("value", value.size());
    typename Sys::Blk* p = es.pnew_bytes(tid, kBytesHeader + key.size() + value.size());
    char* d = &es.template own<char>(tid, p);
    const auto k = static_cast<std::uint32_t>(key.size()), v = static_cast<std::uint32_t>(value.size());
    std::memcpy(d, &k, 4);
    std::memcpy(d + 4, &v, 4);
    if (!key.empty()) std::memcpy(d + kBytesHeader, key.data(), key.size());
    if (!value.empty()) std::memcpy(d + kBytesHeader + key.size(), value.data(), value.size());
    // PERSIST: nothing here: the bytes are written back with the block by
    // the epoch system (its TBP entry of the tagging epoch, P1).
    return p;
  }
  template <class Blk>
  static Key node_key(Key, const Blk* p) {
    return lengths(p).key;
  }
  template <class Sys>
  static Key key_of(const typename Sys::Blk* p) {
    return lengths(p).key;
  }
  template <class Sys>
  static Value value_of(const typename Sys::Blk* p) {
    return lengths(p).value;
  }

  struct View {
    std::string_view key, value;
  };
  // The payload's key and value, validated against the block's size.
  template <class Blk>
  static View lengths(const Blk* p) {
    const auto* d = static_cast<const char*>(p->data());
    const std::uint64_t size = p->size.load(std::memory_order_relaxed);
    std::uint32_t k, v;
    std::memcpy(&k, d, 4);
    std::memcpy(&v, d + 4, 4);
    if (size < kBytesHeader || std::uint64_t{k} + v + kBytesHeader != size)
      throw pmem::PoolError(pmem::Errc::kCorrupt,
                            "montage: the byte-string payload at " + std::to_string(reinterpret_cast<std::uintptr_t>(p)) +
                                " holds a " + std::to_string(size) + "-byte block but says key " + std::to_string(k) +
                                " and value " + std::to_string(v) + " bytes");
    return {std::string_view(d + kBytesHeader, k), std::string_view(d + kBytesHeader + k, v)};
  }
};

}  // namespace internal
}  // namespace ferrite::montage
