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

// dst[0, n) := src[0, n), writing only the 4 KiB pages that differ.
inline void copy_changed_pages(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
  for (std::size_t off = 0; off < n; off += kCopyPage) {
    const std::size_t len = std::min(kCopyPage, n - off);
    if (std::memcmp(dst + off, src + off, len) != 0) std::memcpy(dst + off, src + off, len);
  }
}

}  // namespace ferrite::crash
