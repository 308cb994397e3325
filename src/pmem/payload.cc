// src/pmem/payload.cc — payload blocks (pmem/payload.h): write, validate,
// read, free, mark. The write-back of a payload is issued here and nowhere
// else (one mutation site for every structure that stores byte strings).
#include "ferrite/pmem/payload.h"

#include <bit>

#include "ferrite/persist/persist.h"

namespace ferrite::pmem {

namespace {

constexpr std::uint64_t kMul = 0x9e3779b97f4a7c15ull;

std::string at(std::uint64_t off) {
  static const char* d = "0123456789abcdef";
  std::string s = "0x";
  bool lead = true;
  for (int i = 60; i >= 0; i -= 4) {
    const unsigned x = static_cast<unsigned>((off >> i) & 0xF);
    if (lead && x == 0 && i > 0) continue;
    lead = false;
    s += d[x];
  }
  return "payload at offset " + s;
}

}  // namespace

std::uint64_t payload_hash(std::uint64_t offset, const void* bytes, std::size_t n) noexcept {
  // State: h. Each 8-byte word w: h = rotl((h ^ w) * kMul, 29) * 5 + n —
  // a bijection of h for a given w, so two inputs differing in one word
  // differ in the state after it (and later steps are bijections too).
  const auto* p = static_cast<const unsigned char*>(bytes);
  std::uint64_t h = (offset * kMul) ^ (std::uint64_t{n} << 1) ^ 0x243f6a8885a308d3ull;
  auto step = [&](std::uint64_t w) { h = std::rotl((h ^ w) * kMul, 29) * 5 + 0x52dce729; };
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    step(w);
  }
  if (i < n) {
    std::uint64_t w = 0;
    std::memcpy(&w, p + i, n - i);
    step(w ^ (std::uint64_t{n - i} << 56));
  }
  // Final avalanche (splitmix64's).
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

std::uint64_t write_payload(Pool& pool, int tid, std::string_view bytes) {
  if (bytes.size() > kMaxPayloadBytes)
    throw PoolError(Errc::kInvalidArgument, "pool " + pool.path() + ": a " + std::to_string(bytes.size()) +
                                                "-byte key or value exceeds the " +
                                                std::to_string(kMaxPayloadBytes >> 20) + " MiB payload limit");
  const std::size_t total = kPayloadHeader + bytes.size();
  auto* blk = static_cast<char*>(pool.heap().alloc(total, tid));
  const std::uint64_t off = pool.offset_of(blk);
  PayloadHeader h;
  h.bytes = static_cast<std::uint32_t>(bytes.size());
  h.magic = kPayloadMagic;
  h.check = payload_hash(off, bytes.data(), bytes.size());
  std::memcpy(blk, &h, sizeof h);
  if (!bytes.empty()) std::memcpy(blk + kPayloadHeader, bytes.data(), bytes.size());
  // PERSIST: P1 — the payload's lines are written back here; the caller
  // orders them before the store that publishes the offset (psync or
  // pfence, payload.h P1). No fence here: a structure publishing several
  // payloads (a key and a value) pays one.
  persist::pwb(blk, total);
  return off;
}

std::string payload_problem(const Pool& pool, std::uint64_t offset) {
  const char* base = static_cast<const char*>(pool.base());
  if (offset == 0 || offset % 16 != 0 || offset >= pool.size() || pool.size() - offset < kPayloadHeader)
    return at(offset) + " lies outside the pool's heap or is misaligned";
  const char* blk = base + offset;
  const std::size_t bs = pool.heap().block_at(blk);
  if (bs == 0) return at(offset) + " is not the start of a heap block";
  PayloadHeader h;
  std::memcpy(&h, blk, sizeof h);
  if (h.magic != kPayloadMagic) return at(offset) + " has no payload magic (a damaged pointer, or a freed block)";
  if (h.bytes > kMaxPayloadBytes || kPayloadHeader + std::size_t{h.bytes} > bs)
    return at(offset) + " claims " + std::to_string(h.bytes) + " bytes, more than its " + std::to_string(bs) +
           "-byte block holds";
  if (payload_hash(offset, blk + kPayloadHeader, h.bytes) != h.check)
    return at(offset) + " fails its check (" + std::to_string(h.bytes) + " bytes): torn or damaged";
  return "";
}

std::string_view read_payload(const Pool& pool, std::uint64_t offset, bool validate) {
  if (validate) {
    if (auto why = payload_problem(pool, offset); !why.empty())
      throw PoolError(Errc::kCorrupt, "pool " + pool.path() + ": " + why);
  }
  const char* blk = static_cast<const char*>(pool.base()) + offset;
  PayloadHeader h;
  std::memcpy(&h, blk, sizeof h);
  return {blk + kPayloadHeader, h.bytes};
}

void free_payload(Pool& pool, int tid, std::uint64_t offset) { pool.heap().free(pool.at<void>(offset), tid); }

void mark_payload(const Pool& pool, std::uint64_t offset, const std::function<void(void*)>& mark) {
  if (auto why = payload_problem(pool, offset); !why.empty())
    throw PoolError(Errc::kCorrupt, "pool " + pool.path() + ": " + why);
  mark(pool.at<void>(offset));
}

}  // namespace ferrite::pmem
