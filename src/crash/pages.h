// src/crash/pages.h — make one buffer equal to another by copying only the
// pages that differ.
//
// Private to src/crash/. The crash farm keeps long-lived copies of a pool
// (a worker's reusable image view, sim.cc; its scratch of the runner's
// media, restart.cc) and brings them up to date from one image to the next.
// Most pages are equal between consecutive images, and writing an equal
// page would still dirty it (a copy-on-write fault or a page-cache write),
// so a page is compared first and copied only if it differs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ferrite::crash {

inline constexpr std::size_t kCopyPage = 4096;
alignas(64) inline constexpr std::uint8_t kZeroPage[kCopyPage] = {};

// dst[0, n) := src[0, n), writing only the 4 KiB pages that differ.
inline void copy_changed_pages(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
  for (std::size_t off = 0; off < n; off += kCopyPage) {
    const std::size_t len = std::min(kCopyPage, n - off);
    if (std::memcmp(dst + off, src + off, len) != 0) std::memcpy(dst + off, src + off, len);
  }
}

// dst[0, n) := src[0, n) and dst2[0, n) := src[0, n) (dst2 may be null),
// for destinations that are fresh zero-filled memory (a new anonymous
// mapping, a new memfd): only the pages of src that hold a non-zero byte
// are written. A young pool's heap is mostly zero pages, and each page
// written to fresh memory is a page fault that allocates and clears it.
inline void copy_nonzero_pages(std::uint8_t* dst, std::uint8_t* dst2, const std::uint8_t* src, std::size_t n) {
  for (std::size_t off = 0; off < n; off += kCopyPage) {
    const std::size_t len = std::min(kCopyPage, n - off);
    if (std::memcmp(src + off, kZeroPage, len) == 0) continue;
    std::memcpy(dst + off, src + off, len);
    if (dst2 != nullptr) std::memcpy(dst2 + off, src + off, len);
  }
}

// p[0, n) := 0, writing only the 4 KiB pages that hold a non-zero byte (a
// reused zero-filled mapping: its untouched pages stay untouched).
inline void zero_nonzero_pages(std::uint8_t* p, std::size_t n) {
  for (std::size_t off = 0; off < n; off += kCopyPage) {
    const std::size_t len = std::min(kCopyPage, n - off);
    if (std::memcmp(p + off, kZeroPage, len) != 0) std::memset(p + off, 0, len);
  }
}

}  // namespace ferrite::crash
