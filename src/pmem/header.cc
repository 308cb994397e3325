// src/pmem/header.cc — the header format: encoding a fresh header slot,
// its checksum, and decoding + validating a pool file's header slots and
// chunk map from pread() copies (nothing mapped).
//
// Validation happens BEFORE anything is mapped at the recorded base, so a
// damaged file can neither make us read past a mapping nor map over
// something else.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "internal.h"

namespace ferrite::pmem::detail {

namespace L = layout;

std::uint64_t slot_checksum(const L::HeaderSlot& h) {
  return L::fnv1a64(reinterpret_cast<const unsigned char*>(&h), offsetof(L::HeaderSlot, checksum));
}

L::HeaderSlot make_header(std::size_t size, std::uintptr_t base) {
  L::HeaderSlot h{};
  std::memcpy(h.magic, L::kMagic.data(), L::kMagic.size());
  h.format_version = L::kFormatVersion;
  h.header_size = sizeof(L::HeaderSlot);
  h.pool_size = size;
  h.base = base;
  {
    std::random_device rd;
    for (int i = 0; i < 16; i += 4) {
      const std::uint32_t r = rd();
      std::memcpy(&h.uuid[i], &r, 4);
    }
    h.uuid[6] = static_cast<std::uint8_t>((h.uuid[6] & 0x0F) | 0x40);  // RFC 4122 v4
    h.uuid[8] = static_cast<std::uint8_t>((h.uuid[8] & 0x3F) | 0x80);
  }
  h.chunk_size = L::kChunkSize;
  h.chunk_count = L::heap_chunk_count(size);
  h.chunk_map_offset = L::kChunkMapOffset;
  h.heap_offset = L::heap_offset_for(h.chunk_count);
  h.root_capacity = L::kMaxRoots;
  return h;
}

std::string uuid_text(const std::uint8_t* u) {
  std::string s;
  char b[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    std::snprintf(b, sizeof b, "%02x", u[i]);
    s += b;
  }
  return s;
}

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// Reads exactly n bytes at off; returns false on a short read (EOF).
bool pread_all(int fd, void* buf, std::size_t n, std::uint64_t off, const std::string& path) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(off));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(Errc::kUnreadable, path, "read failed: " + errno_text(errno));
    }
    if (r == 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
    off += static_cast<std::uint64_t>(r);
  }
  return true;
}

enum class SlotState { kOk, kBadMagic, kBadVersion, kBadChecksum };

SlotState classify(const L::HeaderSlot& h) {
  if (std::memcmp(h.magic, L::kMagic.data(), L::kMagic.size()) != 0) return SlotState::kBadMagic;
  if (h.format_version != L::kFormatVersion) return SlotState::kBadVersion;
  if (h.header_size != sizeof(L::HeaderSlot)) return SlotState::kBadChecksum;
  if (h.checksum != slot_checksum(h)) return SlotState::kBadChecksum;
  return SlotState::kOk;
}

bool nul_terminated(const char* s, std::size_t n) { return std::memchr(s, '\0', n) != nullptr; }

bool all_zero(const void* p, std::size_t n) {
  const auto* c = static_cast<const unsigned char*>(p);
  return std::all_of(c, c + n, [](unsigned char x) { return x == 0; });
}

// Field consistency of a checksum-valid slot (the file size is checked by
// the caller). Returns "" when sound.
std::string header_problem(const L::HeaderSlot& h) {
  if (h.pool_size % L::kPage != 0) return "pool size " + std::to_string(h.pool_size) + " is not a multiple of 4 KiB";
  if (h.pool_size < L::kMinPoolSize) return "pool size " + std::to_string(h.pool_size) + " is below the 1 MiB minimum";
  if (h.pool_size > kMaxPoolSize) return "pool size " + std::to_string(h.pool_size) + " exceeds the maximum";
  if (h.base == 0 || h.base % L::kBaseAlign != 0)
    return "base address " + hex(h.base) + " is not 2 MiB aligned";
  if (h.base >= L::kUserSpaceEnd || h.pool_size > L::kUserSpaceEnd - h.base)
    return "base address " + hex(h.base) + " + size is not a user-space address range";
  if (h.chunk_size != L::kChunkSize) return "chunk size " + std::to_string(h.chunk_size) + " is not 65536";
  if (h.chunk_map_offset != L::kChunkMapOffset) return "chunk map offset " + hex(h.chunk_map_offset) + " is not 0x4000";
  if (h.chunk_count != L::heap_chunk_count(h.pool_size))
    return "chunk count " + std::to_string(h.chunk_count) + " does not match the pool size (expected " +
           std::to_string(L::heap_chunk_count(h.pool_size)) + ")";
  if (h.heap_offset != L::heap_offset_for(h.chunk_count)) return "heap offset " + hex(h.heap_offset) + " is wrong";
  if (h.root_capacity != L::kMaxRoots) return "root capacity " + std::to_string(h.root_capacity) + " is not 32";
  const std::uint64_t heap_end = h.heap_offset + h.chunk_count * L::kChunkSize;
  std::set<std::string> names;
  for (std::size_t i = 0; i < L::kMaxRoots; ++i) {
    const L::RootEntry& r = h.roots[i];
    const std::string at = "root entry " + std::to_string(i);
    if (r.in_use == 0) {
      if (!all_zero(&r, sizeof r)) return at + " is free but not zeroed";
      continue;
    }
    if (r.in_use != 1) return at + " has in_use=" + std::to_string(r.in_use);
    if (!nul_terminated(r.name, sizeof r.name)) return at + ": name is not NUL-terminated";
    if (r.name[0] == '\0') return at + ": empty name";
    if (!nul_terminated(r.type_name, sizeof r.type_name)) return at + ": type name is not NUL-terminated";
    if (r.reserved != 0) return at + ": reserved field is not zero";
    if (!names.insert(r.name).second) return at + ": duplicate name '" + std::string(r.name) + "'";
    if (r.size == 0 || r.offset < h.heap_offset || r.offset >= heap_end || r.size > heap_end - r.offset)
      return "root '" + std::string(r.name) + "' (offset " + hex(r.offset) + ", size " +
             std::to_string(r.size) + ") lies outside the heap";
  }
  return "";
}

// Chunk map validity, then that each root is an allocated block.
std::string map_problem(const L::HeaderSlot& h, const std::vector<std::uint32_t>& map) {
  const std::size_t n = map.size();
  for (std::size_t i = 0; i < n;) {
    const std::uint32_t e = map[i];
    if (e == L::kChunkFree || L::is_small(e) || e == L::kLargeTail) {
      ++i;  // a tail not covered by a head is an orphan (read as free)
      continue;
    }
    if (L::chunk_kind(e) == L::kLargeHead) {
      const std::uint32_t run = L::chunk_arg(e);
      if (run == 0 || run > n - i)
        return "chunk map entry " + std::to_string(i) + " starts a run of " + std::to_string(run) +
               " chunks that does not fit the heap";
      for (std::size_t t = i + 1; t < i + run; ++t)
        if (map[t] != L::kLargeTail)
          return "chunk map entry " + std::to_string(t) + " (" + hex(map[t]) +
                 ") should continue the run starting at chunk " + std::to_string(i);
      i += run;
      continue;
    }
    return "chunk map entry " + std::to_string(i) + " = " + hex(e) +
           " is neither free, a size class nor a run";
  }
  const auto orphan = orphan_tails(map);
  for (const L::RootEntry& r : h.roots) {
    if (r.in_use == 0) continue;
    const std::uint64_t rel = r.offset - h.heap_offset;
    std::uint64_t c = rel / L::kChunkSize;
    const std::string bad = "root '" + std::string(r.name) + "' at offset " + hex(r.offset);
    while (c > 0 && map[c] == L::kLargeTail && !orphan[c]) --c;
    const std::uint32_t e = map[c];
    const std::uint64_t in_chunk = rel - c * L::kChunkSize;
    if (L::is_small(e)) {
      const int cls = static_cast<int>(L::chunk_kind(e)) - 1;
      const std::uint32_t bs = class_size(cls);
      if (in_chunk % bs != 0 || in_chunk / bs >= blocks_per_chunk(cls) || r.size > bs)
        return bad + " is not an allocated block of its chunk's size class";
    } else if (L::chunk_kind(e) == L::kLargeHead && !orphan[c]) {
      if (in_chunk != 0 || r.size > L::chunk_arg(e) * L::kChunkSize)
        return bad + " does not match the chunk run holding it";
    } else {
      return bad + " lies in a free chunk";
    }
  }
  return "";
}

std::string_view slot_problem(SlotState s) {
  switch (s) {
    case SlotState::kOk: return "";
    case SlotState::kBadMagic: return "bad magic";
    case SlotState::kBadVersion: return "unknown format version";
    case SlotState::kBadChecksum: return "checksum mismatch";
  }
  return "?";
}

// Root names of a slot, read defensively (the slot may not verify: only
// in-use entries with a NUL-terminated non-empty name count).
std::set<std::string> root_names(const L::HeaderSlot& h) {
  std::set<std::string> v;
  for (const auto& r : h.roots)
    if (r.in_use == 1 && nul_terminated(r.name, sizeof r.name) && r.name[0] != '\0') v.insert(r.name);
  return v;
}

// The rule of docs/pool-format.md "The double header": what the slot not
// in force says about the history of the slot in force.
HeaderHealth classify_pair(const L::HeaderSlot& in_force, int slot, const L::HeaderSlot& other, SlotState other_state) {
  HeaderHealth hh;
  hh.slot = slot;
  hh.generation = in_force.generation;
  hh.other_generation = other.generation;
  hh.other_problem = std::string(slot_problem(other_state));
  const std::string g = std::to_string(in_force.generation), o = std::to_string(1 - slot), f = std::to_string(slot);
  if (other_state == SlotState::kOk) {
    if (other.generation == in_force.generation) {
      // Same generation, both checksums verify: the two are copies of one
      // update (a difference would need two 64-bit checksum collisions).
      hh.state = HeaderState::kInSync;
      return hh;
    }
    hh.state = HeaderState::kCompleted;
    hh.message = "header slot " + o + " holds generation " + std::to_string(other.generation) + ", slot " + f +
                 " generation " + g + ": a crash interrupted a header update after it committed; open brings slot " +
                 o + " up to date (nothing lost)";
    return hh;
  }
  if (other.generation <= in_force.generation) {
    hh.state = HeaderState::kRepaired;
    hh.message = "header slot " + o + " is damaged (" + hh.other_problem + "); open rewrites it from slot " + f +
                 " (generation " + g + "; nothing lost)";
    return hh;
  }
  hh.state = HeaderState::kFellBack;
  const auto mine = root_names(in_force), theirs = root_names(other);
  for (const auto& n : theirs)
    if (!mine.count(n)) hh.roots_only_in_other.push_back(n);
  for (const auto& n : mine)
    if (!theirs.count(n)) hh.roots_only_in_force.push_back(n);
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& n : v) s += (s.empty() ? "'" : ", '") + n + "'";
    return s.empty() ? std::string("none") : s;
  };
  hh.message = "header slot " + o + " claims the newer generation " + std::to_string(other.generation) + " but does not verify (" +
               hh.other_problem + "): the pool falls back to generation " + g + " in slot " + f +
               " — either a crash tore a header update before it committed (that update never returned) or the newer slot was damaged;"
               " roots only in the newer slot: " + list(hh.roots_only_in_other) +
               "; roots only in the older: " + list(hh.roots_only_in_force);
  return hh;
}

}  // namespace

FileState load_and_validate(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(Errc::kUnreadable, path, "fstat failed: " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISFIFO(st.st_mode)  ? "a FIFO"
                       : S_ISDIR(st.st_mode) ? "a directory"
                       : S_ISCHR(st.st_mode) ? "a character device"
                       : S_ISBLK(st.st_mode) ? "a block device (put a DAX file system on it and a pool file in that)"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    fail(Errc::kUnreadable, path, std::string("not a pool file: it is ") + what);
  }
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  if (file_size < L::kChunkMapOffset)
    fail(Errc::kTruncated, path,
         "file is " + std::to_string(file_size) + " bytes, too small to hold the two 8 KiB header slots");
  FileState fs;
  L::HeaderSlot slots[2];
  SlotState state[2];
  for (int s = 0; s < 2; ++s) {
    if (!pread_all(fd, &slots[s], sizeof(L::HeaderSlot), L::kSlotOffset[s], path))
      fail(Errc::kTruncated, path, "file ends inside header slot " + std::to_string(s));
    state[s] = classify(slots[s]);
  }
  int best = -1;
  // Ties (both slots at one generation: the state at rest) go to slot 0.
  for (int s = 0; s < 2; ++s)
    if (state[s] == SlotState::kOk && (best < 0 || slots[s].generation > slots[best].generation)) best = s;
  if (best < 0) {
    auto any = [&](SlotState x) { return state[0] == x || state[1] == x; };
    if (any(SlotState::kBadChecksum))
      fail(Errc::kChecksum, path, "no header slot verifies (checksum mismatch in both slots)");
    if (any(SlotState::kBadVersion)) {
      const std::uint32_t v = state[0] == SlotState::kBadVersion ? slots[0].format_version : slots[1].format_version;
      fail(Errc::kBadVersion, path,
           "format version " + std::to_string(v) + " is not supported (this build reads version " +
               std::to_string(L::kFormatVersion) + ")");
    }
    fail(Errc::kBadMagic, path, "not a Ferrite pool (bad magic)");
  }
  fs.hdr = slots[best];
  fs.slot = best;
  fs.other_valid = state[1 - best] == SlotState::kOk;
  fs.health = classify_pair(slots[best], best, slots[1 - best], state[1 - best]);
  // Two verifying slots of one generation are two copies of one update; if
  // their bytes differ, something other than this library wrote one of them
  // (or a checksum collided): refuse rather than guess which is right.
  if (fs.health.state == HeaderState::kInSync && std::memcmp(&slots[0], &slots[1], sizeof(L::HeaderSlot)) != 0)
    fail(Errc::kCorrupt, path,
         "header slots 0 and 1 both verify at generation " + std::to_string(slots[0].generation) +
             " but their contents differ");
  const L::HeaderSlot& h = fs.hdr;
  if (h.pool_size > file_size)
    fail(Errc::kTruncated, path,
         "file is " + std::to_string(file_size) + " bytes but its header records " + std::to_string(h.pool_size));
  if (h.pool_size < file_size)
    fail(Errc::kCorrupt, path,
         "file is " + std::to_string(file_size) + " bytes but its header records " + std::to_string(h.pool_size));
  if (auto why = header_problem(h); !why.empty()) fail(Errc::kCorrupt, path, why);
  fs.map.resize(h.chunk_count);
  if (!pread_all(fd, fs.map.data(), 4 * h.chunk_count, h.chunk_map_offset, path))
    fail(Errc::kTruncated, path, "file ends inside the chunk map");
  if (auto why = map_problem(h, fs.map); !why.empty()) fail(Errc::kCorrupt, path, why);
  return fs;
}

}  // namespace ferrite::pmem::detail

namespace ferrite::pmem {

std::string_view header_state_name(HeaderState s) {
  switch (s) {
    case HeaderState::kInSync: return "in-sync";
    case HeaderState::kCompleted: return "completed";
    case HeaderState::kRepaired: return "repaired";
    case HeaderState::kFellBack: return "fell-back";
  }
  return "?";
}

}  // namespace ferrite::pmem
