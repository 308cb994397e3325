// adapters/bytes_codec.h — how the crash campaigns and the benchmark put
// byte strings into a structure that holds them, and check every byte that
// comes back.
//
// The campaigns' operation vocabulary (ferrite/op.h) and its checkers speak
// 64-bit integers. An adapter of a byte-string structure turns each integer
// x the workload writes (a key or a value) into a byte string whose size is
// drawn, deterministically from x, from the campaign's range (Setup::sizes:
// `crashtest --key-size A..B --value-size A..B`), and turns what the
// structure returns back into x — only if EVERY byte is the one encode(x)
// wrote. Anything else (a torn payload, another element's bytes, a freed
// block's garbage) decodes to kCorrupt, an integer no workload writes, so
// the checker reports a violation. The checkers thus compare byte for byte
// without knowing about bytes.
//
// Encoding of x into n bytes (n = max(min_bytes(x), a size drawn from the
// range)): byte i < min(n, 8) is byte i of x (little-endian; zero when
// i >= min_bytes(x)); bytes from 8 on are a keystream of x. So distinct x
// give distinct strings (the first min(n, 8) bytes hold all of x), and
// decode reads x from the first bytes, re-encodes and compares. Sizes below
// min_bytes(x) (the bytes x needs: 5 for the workloads' values, 1 for small
// keys) are raised to it — say so when choosing a range.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapter.h"
#include "ferrite/pmem/pool.h"

namespace ferrite::adapters::bytes {

// Never written by a workload (negative, not a marker of op.h).
inline constexpr std::int64_t kCorrupt = -0x0bad0bad0bad0badll;

struct Range {
  std::size_t lo = 8, hi = 8;
};
// The ranges an adapter uses: the campaign's (Setup::sizes), else the bench's
// fixed sizes (Setup::value_size / key_size).
inline Range value_range(const Setup& s) {
  if (s.sizes.value_max != 0) return {s.sizes.value_min, s.sizes.value_max};
  return {s.value_size, s.value_size};
}
inline Range key_range(const Setup& s) {
  if (s.sizes.key_max != 0) return {s.sizes.key_min, s.sizes.key_max};
  return {s.key_size, s.key_size};
}

inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline std::size_t min_bytes(std::int64_t x) {
  const auto u = static_cast<std::uint64_t>(x);
  std::size_t n = 1;
  while (n < 8 && (u >> (8 * n)) != 0) ++n;
  return n;
}

// Salts keep a key's and a value's sizes and streams apart.
inline constexpr std::uint64_t kKeySalt = 0x6b6579, kValueSalt = 0x76616c;

inline std::string encode(std::int64_t x, Range r, std::uint64_t salt) {
  const std::uint64_t h = mix(static_cast<std::uint64_t>(x) ^ mix(salt));
  const std::size_t drawn = r.lo + static_cast<std::size_t>(h % (r.hi - r.lo + 1));
  const std::size_t n = std::max(drawn, min_bytes(x));
  std::string s(n, '\0');
  const auto u = static_cast<std::uint64_t>(x);
  for (std::size_t i = 0; i < std::min<std::size_t>(n, 8); ++i) s[i] = static_cast<char>((u >> (8 * i)) & 0xFF);
  for (std::size_t i = 8; i < n; i += 8) {
    const std::uint64_t w = mix(h + i);
    for (std::size_t j = 0; j < 8 && i + j < n; ++j) s[i + j] = static_cast<char>((w >> (8 * j)) & 0xFF);
  }
  return s;
}

// x if `b` is exactly encode(x, r, salt) for some x, else kCorrupt.
inline std::int64_t decode(std::string_view b, Range r, std::uint64_t salt) {
  if (b.empty()) return kCorrupt;
  std::uint64_t u = 0;
  for (std::size_t i = 0; i < std::min<std::size_t>(b.size(), 8); ++i)
    u |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[i])) << (8 * i);
  const auto x = static_cast<std::int64_t>(u);
  return encode(x, r, salt) == b ? x : kCorrupt;
}

// The sizes an adapter encodes with: the campaign's ranges (`--key-size`,
// `--value-size`), else a bench run's sizes other than 8 bytes (exactly),
// else the adapter's defaults (so campaigns exercise real sizes by default).
inline Setup with_sizes(Setup s, Range key_default, Range value_default) {
  if (s.sizes.key_max == 0) {
    s.sizes.key_min = s.key_size != 8 ? s.key_size : key_default.lo;
    s.sizes.key_max = s.key_size != 8 ? s.key_size : key_default.hi;
  }
  if (s.sizes.value_max == 0) {
    s.sizes.value_min = s.value_size != 8 ? s.value_size : value_default.lo;
    s.sizes.value_max = s.value_size != 8 ? s.value_size : value_default.hi;
  }
  return s;
}

inline std::string encode_value(std::int64_t v, const Setup& s) { return encode(v, value_range(s), kValueSalt); }
inline std::int64_t decode_value(std::string_view b, const Setup& s) { return decode(b, value_range(s), kValueSalt); }
inline std::string encode_key(std::int64_t k, const Setup& s) { return encode(k, key_range(s), kKeySalt); }
inline std::int64_t decode_key(std::string_view b, const Setup& s) { return decode(b, key_range(s), kKeySalt); }

// One operation of the map vocabulary on a byte-string map M (the old value
// handed to a callback by put / get / remove, as both byte maps offer; sync
// where M has it): keys and values encoded, what comes back decoded. A
// payload that fails validation reads as kCorrupt (the checker reports
// it); any other error (a full pool) propagates.
template <class M>
op::Response map_apply(M& m, int tid, const op::Op& o, const Setup& s, const char* technique) {
  try {
    std::optional<std::int64_t> old;
    const auto take = [&](std::string_view v) { old = decode_value(v, s); };
    switch (o.kind) {
      case op::kPut: m.put(tid, encode_key(o.arg, s), encode_value(o.arg2, s), take); break;
      case op::kGet: m.get(tid, encode_key(o.arg, s), take); break;
      case op::kErase: m.remove(tid, encode_key(o.arg, s), take); break;
      case op::kSync:
        if constexpr (requires { m.sync(); }) m.sync();
        return op::Response::ack();
      default: unsupported(technique, o);
    }
    return op::Response::from(old);
  } catch (const pmem::PoolError& e) {
    if (e.code() != pmem::Errc::kCorrupt) throw;
    return op::Response::of(kCorrupt);
  }
}

// A map's observed state (crash/subject.h): (key, value) pairs sorted by
// the decoded key, flattened.
inline std::vector<std::int64_t> sorted_pairs(std::vector<std::pair<std::int64_t, std::int64_t>> kv) {
  std::sort(kv.begin(), kv.end());
  std::vector<std::int64_t> out;
  for (const auto& [k, v] : kv) {
    out.push_back(k);
    out.push_back(v);
  }
  return out;
}

}  // namespace ferrite::adapters::bytes
