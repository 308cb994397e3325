// ferrite/persist/line_writeback.h — write back each distinct cache line of
// a sequence of small objects once.
//
// Nodes a thread allocates consecutively share cache lines (persistence
// principle 3 of the PBcomb paper: allocate in consecutive addresses), so a
// round that persists k new nodes issues about k * node_size / 64 pwbs, not k.
// Lines are compared with the previous one only, which is what consecutive
// allocation needs; a line revisited later is written back again (harmless).
//
// Thread safety: an object is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ferrite/persist/persist.h"

namespace ferrite::persist {

// Writes back each distinct cache line of a sequence of small objects once
// (nodes allocated consecutively share lines: persistence principle 3).
// Lines are compared with the previous one only, which is what consecutive
// allocation needs; a line revisited later is written back again (harmless).
class LineWriteback {
 public:
  // The write-backs carry the caller's site (persist.h).
  void add(const void* p, std::size_t n, const Site& where = Site::current()) {
    auto a = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{kCacheLine - 1};
    const auto end = reinterpret_cast<std::uintptr_t>(p) + n;
    for (; a < end; a += kCacheLine) {
      if (a == last_) continue;
      pwb(reinterpret_cast<const void*>(a), where);
      last_ = a;
    }
  }
  void reset() { last_ = 0; }

 private:
  std::uintptr_t last_ = 0;
};

}  // namespace ferrite::persist
