// ferrite/pmem/layout.h — the on-media layout of a Ferrite pool, format 1.
//
// What it is: the byte-exact description of a pool file, shared by the pool
// (src/pmem/header.cc, pool.cc), `ferrite check|info` and docs/pool-format.md. Every
// struct is standard-layout and its size and field offsets are
// static_assert'ed: changing any of them is a format change (bump
// kFormatVersion).
//
//   offset            size                 what
//   0                 8 KiB                header slot 0 (HeaderSlot)
//   8 KiB             8 KiB                header slot 1 (HeaderSlot)
//   16 KiB            4 * chunk_count      chunk map (u32 per chunk, ChunkMapEntry)
//   heap_offset       64 KiB * chunk_count heap chunks (heap_offset = 64 KiB aligned)
//
// Double header. The valid header is the slot whose magic, version and
// checksum verify and whose generation is the highest (slot 0 on a tie). An
// update copies the current header, increments the generation, writes the
// copy over the OTHER slot, write-backs it and psyncs (the commit point),
// then writes the same copy over the first slot and psyncs: at rest both
// slots hold one generation, so a slot damaged at rest is repaired from its
// twin at open; a crash at any point leaves at least one verifying slot
// (the old one, or the new one once complete). docs/pool-format.md "The
// double header" has the states open distinguishes (pool.h HeaderState).
//
// Thread safety: plain data; the pool serializes header updates.
// Persistence invariants: (1) a chunk map entry is durable before any block
// of that chunk is handed out; (2) a root object is durable before the header
// slot that names it; (3) a header slot is durable before it is the newest.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace ferrite::pmem::layout {

inline constexpr std::array<char, 8> kMagic = {'F', 'E', 'R', 'R', 'I', 'T', 'E', '\0'};
inline constexpr std::uint32_t kFormatVersion = 1;

inline constexpr std::size_t kPage = 4096;
inline constexpr std::size_t kMinPoolSize = std::size_t{1} << 20;   // 1 MiB
inline constexpr std::size_t kChunkSize = std::size_t{64} << 10;    // 64 KiB
inline constexpr std::size_t kMaxRoots = 32;
inline constexpr std::size_t kRootNameBytes = 48;  // name up to 47 chars + NUL
inline constexpr std::size_t kTypeNameBytes = 48;  // type name up to 47 chars + NUL
// Base addresses are 2 MiB aligned (huge-page friendly; chunks are then
// aligned to their size in the address space too).
inline constexpr std::uint64_t kBaseAlign = std::uint64_t{2} << 20;
// Highest user-space address + 1 on x86-64 with 4-level paging.
inline constexpr std::uint64_t kUserSpaceEnd = std::uint64_t{1} << 47;

// One named root. A free entry is all zero.
struct RootEntry {
  char name[kRootNameBytes];           // NUL-terminated, non-empty when used
  std::uint64_t offset;                // of the object, from the pool base
  std::uint64_t size;                  // sizeof the object
  std::uint32_t type_tag;
  std::uint32_t type_version;
  std::uint32_t in_use;                // 0 free, 1 used
  std::uint32_t reserved;              // 0
  char type_name[kTypeNameBytes];      // NUL-terminated, may be empty
};
static_assert(sizeof(RootEntry) == 128);
static_assert(offsetof(RootEntry, name) == 0);
static_assert(offsetof(RootEntry, offset) == 48);
static_assert(offsetof(RootEntry, size) == 56);
static_assert(offsetof(RootEntry, type_tag) == 64);
static_assert(offsetof(RootEntry, type_version) == 68);
static_assert(offsetof(RootEntry, in_use) == 72);
static_assert(offsetof(RootEntry, type_name) == 80);

struct HeaderSlot {
  char magic[8];                       // kMagic
  std::uint32_t format_version;        // kFormatVersion
  std::uint32_t header_size;           // sizeof(HeaderSlot)
  std::uint64_t pool_size;             // bytes; equals the file size
  std::uint64_t base;                  // mapping address
  std::uint8_t uuid[16];               // random at create
  std::uint64_t generation;            // newest valid slot wins
  std::uint64_t chunk_size;            // kChunkSize
  std::uint64_t chunk_count;           // heap_chunk_count(pool_size)
  std::uint64_t chunk_map_offset;      // kChunkMapOffset
  std::uint64_t heap_offset;           // heap_offset_for(chunk_count)
  std::uint32_t root_capacity;         // kMaxRoots
  std::uint32_t reserved0;
  std::uint8_t reserved1[32];
  RootEntry roots[kMaxRoots];
  std::uint8_t reserved2[8192 - 128 - kMaxRoots * sizeof(RootEntry) - 8];
  std::uint64_t checksum;              // FNV-1a 64 of bytes [0, offsetof(checksum))
};
static_assert(sizeof(HeaderSlot) == 8192);
static_assert(offsetof(HeaderSlot, format_version) == 8);
static_assert(offsetof(HeaderSlot, header_size) == 12);
static_assert(offsetof(HeaderSlot, pool_size) == 16);
static_assert(offsetof(HeaderSlot, base) == 24);
static_assert(offsetof(HeaderSlot, uuid) == 32);
static_assert(offsetof(HeaderSlot, generation) == 48);
static_assert(offsetof(HeaderSlot, chunk_size) == 56);
static_assert(offsetof(HeaderSlot, chunk_count) == 64);
static_assert(offsetof(HeaderSlot, chunk_map_offset) == 72);
static_assert(offsetof(HeaderSlot, heap_offset) == 80);
static_assert(offsetof(HeaderSlot, root_capacity) == 88);
static_assert(offsetof(HeaderSlot, roots) == 128);
static_assert(offsetof(HeaderSlot, checksum) == 8184);

inline constexpr std::size_t kSlotOffset[2] = {0, sizeof(HeaderSlot)};
inline constexpr std::size_t kChunkMapOffset = 2 * sizeof(HeaderSlot);  // 16 KiB

// ---------------------------------------------------------------- heap

// Size classes. The index is stored in the chunk map, so this table is part
// of the format. Powers of two and 1.5x steps that are multiples of 64, so
// every block is aligned to min(block size, 64).
inline constexpr std::array<std::uint32_t, 22> kSizeClasses = {
    16,   32,   64,    128,   192,   256,   384,   512,   768,   1024,  1536,
    2048, 3072, 4096,  6144,  8192,  12288, 16384, 24576, 32768, 49152, 65536};
inline constexpr int kNumClasses = static_cast<int>(kSizeClasses.size());
static_assert(kSizeClasses.back() == kChunkSize);
constexpr bool size_classes_ok() {
  for (std::size_t i = 0; i < kSizeClasses.size(); ++i) {
    const auto s = kSizeClasses[i];
    const bool pow2 = (s & (s - 1)) == 0;
    if (!pow2 && s % 64 != 0) return false;
    if (i > 0 && s <= kSizeClasses[i - 1]) return false;
  }
  return true;
}
static_assert(size_classes_ok());

// Chunk map entry (u32): low 8 bits the kind, high 24 bits an argument.
//   0x00000000          free
//   kind 1..22          small blocks of kSizeClasses[kind-1]; argument 0
//   kind kLargeHead     first chunk of a run of `argument` (>= 1) chunks holding one block
//   kind kLargeTail     other chunks of that run; argument 0
inline constexpr std::uint32_t kChunkFree = 0;
inline constexpr std::uint32_t kLargeHead = 0xF0;
inline constexpr std::uint32_t kLargeTail = 0xF1;
inline constexpr std::uint32_t kMaxRunChunks = (1u << 24) - 1;
constexpr std::uint32_t chunk_kind(std::uint32_t e) { return e & 0xFFu; }
constexpr std::uint32_t chunk_arg(std::uint32_t e) { return e >> 8; }
constexpr std::uint32_t small_entry(int cls) { return static_cast<std::uint32_t>(cls + 1); }
constexpr std::uint32_t large_head_entry(std::uint32_t run) { return kLargeHead | (run << 8); }
constexpr bool is_small(std::uint32_t e) {
  return chunk_arg(e) == 0 && chunk_kind(e) >= 1 && chunk_kind(e) <= kNumClasses;
}

constexpr std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

constexpr std::uint64_t heap_offset_for(std::uint64_t chunk_count) {
  return align_up(kChunkMapOffset + 4 * chunk_count, kChunkSize);
}
// Largest chunk count whose map and chunks fit in pool_size.
constexpr std::uint64_t heap_chunk_count(std::uint64_t pool_size) {
  if (pool_size < kChunkMapOffset + kChunkSize) return 0;
  std::uint64_t c = (pool_size - kChunkMapOffset) / (kChunkSize + 4);
  while (c > 0 && heap_offset_for(c) + c * kChunkSize > pool_size) --c;
  return c;
}
static_assert(heap_chunk_count(kMinPoolSize) == 15);
static_assert(heap_offset_for(15) == kChunkSize);

// FNV-1a, 64 bit. Hand-written (a dozen lines) rather than a library
// dependency: it detects every single-byte change and random damage with
// probability 1 - 2^-64, which is what a header checksum needs.
constexpr std::uint64_t fnv1a64(const unsigned char* p, std::size_t n) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace ferrite::pmem::layout
