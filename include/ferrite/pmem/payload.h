// ferrite/pmem/payload.h — byte strings in a pool: out-of-line payload
// blocks, the one place where a structure's keys and values of any size
// are written, published, validated, read and reclaimed.
//
// What it is. A payload is one heap block holding a 16-byte header and the
// bytes (0 to kMaxPayloadBytes of them: every byte string, empty included):
//
//   offset  size  field
//   0       4     bytes     the length n
//   4       4     magic     kPayloadMagic
//   8       8     check     payload_hash(offset of the block, n, bytes)
//   16      n     the bytes
//
// A structure stores a payload by its offset from the pool base (a
// std::uint64_t that fits the structures' 8-byte value words; never 0,
// since the heap starts after the header and chunk map).
//
// Ownership. A payload belongs to exactly one structure, the one whose
// durable state names its offset. That structure's recovery hook marks it
// (mark_payload) so pool recovery never frees it, and that structure alone
// frees it (free_payload), after its durable state stops naming it and no
// reader can still hold the offset (epochs for concurrent readers).
//
// Persistence (the rule every caller follows; docs/payloads.md):
//   P1. write_payload writes the header and bytes and issues pwb over them;
//       it issues no fence. Before publishing the offset (the store or CAS
//       that makes a durable structure name it) the caller orders those
//       write-backs before the publication: psync when another thread
//       persists the publication (a combiner), pfence when the caller's own
//       later write-back publishes it.
//   P2. A payload is immutable once published: an update writes a new
//       payload and publishes its offset in place of the old one.
//   P3. The check mixes the block's own offset, so a payload copied to
//       another block, a torn payload, and a damaged pointer to a block that
//       is not a payload all fail read_payload's validation (kCorrupt naming
//       the offset) instead of returning someone else's bytes.
//
// Thread safety: write/free take the caller's heap arena (thread id);
// reading is safe from any thread while the owner keeps the payload alive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>

#include "ferrite/pmem/pool.h"

namespace ferrite::pmem {

inline constexpr std::uint32_t kPayloadMagic = 0x50594c44;  // "DLYP"
inline constexpr std::size_t kPayloadHeader = 16;
// Largest payload: 16 MiB (a run of chunks). A larger put throws
// PoolError(kInvalidArgument) naming the size and the limit.
inline constexpr std::size_t kMaxPayloadBytes = std::size_t{16} << 20;

struct PayloadHeader {
  std::uint32_t bytes;
  std::uint32_t magic;
  std::uint64_t check;
};
static_assert(sizeof(PayloadHeader) == kPayloadHeader);
static_assert(offsetof(PayloadHeader, magic) == 4);
static_assert(offsetof(PayloadHeader, check) == 8);

// The payload check: a 64-bit multiply-rotate hash over 8-byte words.
// Hand-written (a dozen lines) rather than a library: it must be the same
// on every build that reads the pool, and it runs at ~8 bytes per cycle
// where byte-wise FNV-1a (layout.h) runs at one; every single-bit change is
// detected (each step is a bijection of the state given the word).
std::uint64_t payload_hash(std::uint64_t offset, const void* bytes, std::size_t n) noexcept;

// Allocates a payload block in arena `tid`, writes `bytes` into it and
// issues its write-backs (P1: no fence). Returns the block's offset.
// Throws PoolError: kInvalidArgument over kMaxPayloadBytes; kFull when the
// pool has no room (the message names the bytes asked for and the heap's
// free chunks).
std::uint64_t write_payload(Pool& pool, int tid, std::string_view bytes);

// Validates the payload at `offset` without throwing: "" when it is sound,
// else what is wrong (outside the heap, not a block start, bad magic,
// length beyond its block, check mismatch).
std::string payload_problem(const Pool& pool, std::uint64_t offset);

// The payload's bytes, in place (valid while the owner keeps it alive).
// `validate` (default) recomputes the check: a damaged payload throws
// PoolError(kCorrupt) naming the offset and what is wrong.
std::string_view read_payload(const Pool& pool, std::uint64_t offset, bool validate = true);

// Returns the payload's block to arena `tid` (the caller owns it: P2 and the
// ownership rule above).
void free_payload(Pool& pool, int tid, std::uint64_t offset);

// For recovery hooks: marks the payload's block live. A payload that does
// not validate throws PoolError(kCorrupt) naming the offset, so a damaged
// pointer fails the hook (Pool::recover keeps every block) instead of
// marking a stranger's block or reading past the pool.
void mark_payload(const Pool& pool, std::uint64_t offset, const std::function<void(void*)>& mark);

// Typed convenience over the byte strings: a trivially copyable T stored as
// its object representation.
template <class T>
  requires std::is_trivially_copyable_v<T>
std::uint64_t write_payload_as(Pool& pool, int tid, const T& v) {
  return write_payload(pool, tid, std::string_view(reinterpret_cast<const char*>(&v), sizeof v));
}
template <class T>
  requires std::is_trivially_copyable_v<T>
T read_payload_as(const Pool& pool, std::uint64_t offset) {
  const std::string_view b = read_payload(pool, offset);
  if (b.size() != sizeof(T))
    throw PoolError(Errc::kRootType, "payload at offset " + std::to_string(offset) + " holds " +
                                         std::to_string(b.size()) + " bytes, not a " + std::to_string(sizeof(T)) +
                                         "-byte value");
  T v;
  std::memcpy(&v, b.data(), sizeof v);
  return v;
}

}  // namespace ferrite::pmem
