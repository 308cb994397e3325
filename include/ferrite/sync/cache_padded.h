// ferrite/sync/cache_padded.h — a value alone on its cache lines.
//
// 128 bytes, not 64: adjacent-line prefetchers on x86 pull pairs of lines, so
// two hot values 64 bytes apart still share traffic.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace ferrite::sync {

inline constexpr std::size_t kPadding = 128;

template <class T>
struct alignas(kPadding) CachePadded {
  T value{};

  CachePadded() = default;
  template <class... A>
  explicit CachePadded(A&&... a) : value(std::forward<A>(a)...) {}

  T& operator*() { return value; }
  const T& operator*() const { return value; }
  T* operator->() { return &value; }
  const T* operator->() const { return &value; }
};

}  // namespace ferrite::sync
