// ferrite/key32.h — a 32-byte key, for the map benchmarks of the nbMontage
// paper (Cai et al., DISC 2021, §5: "keys of 32 bytes and values of 1 KB").
//
// What it is. The operation vocabulary (ferrite/op.h) carries 64-bit keys;
// a map that takes 32-byte keys (`ferrite bench --key-size 32`) turns the
// operation's key k into Key32::from(k): 32 bytes, all of them a function
// of k (four rounds of splitmix64), distinct for distinct k (the first
// word is a bijection of k). Keys are byte strings: equality and order are
// memcmp over the 32 bytes, the hash reads all 32 bytes. Nothing here
// knows the 64-bit key again: a structure stores, compares and hashes the
// 32 bytes.
//
// Thread safety: a value type (trivially copyable); no shared state.
#pragma once

#include <compare>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ferrite {

struct Key32 {
  unsigned char bytes[32];

  static constexpr std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer (a bijection)
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
  static Key32 from(std::int64_t k) {
    Key32 key;
    std::uint64_t x = static_cast<std::uint64_t>(k);
    for (int i = 0; i < 4; ++i) {
      const std::uint64_t w = mix(x + static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ull);
      std::memcpy(key.bytes + 8 * i, &w, sizeof w);
    }
    return key;
  }
  // A 64-bit hash of all 32 bytes.
  std::uint64_t hash() const {
    std::uint64_t h = 0x243f6a8885a308d3ull;
    for (int i = 0; i < 4; ++i) {
      std::uint64_t w;
      std::memcpy(&w, bytes + 8 * i, sizeof w);
      h = mix(h ^ w);
    }
    return h;
  }
  friend bool operator==(const Key32& a, const Key32& b) { return std::memcmp(a.bytes, b.bytes, 32) == 0; }
  friend std::strong_ordering operator<=>(const Key32& a, const Key32& b) {
    const int c = std::memcmp(a.bytes, b.bytes, 32);
    return c < 0 ? std::strong_ordering::less : c > 0 ? std::strong_ordering::greater : std::strong_ordering::equal;
  }
};
static_assert(sizeof(Key32) == 32 && std::is_trivially_copyable_v<Key32>);

}  // namespace ferrite
