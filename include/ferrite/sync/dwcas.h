// ferrite/sync/dwcas.h — 16-byte compare-and-swap (double-width CAS).
//
// Mirror's patomic<T>, nbMontage's CASObj and the Friedman log queue's log
// words update two adjacent 64-bit words atomically. On x86-64 that is
// `lock cmpxchg16b`; Ferrite is built with -mcx16 so the __sync builtins
// below compile to that instruction inline, never to a libatomic call (which
// may take a lock and is not failure-atomic on persistent memory).
//
// Thread safety: every function is atomic on its 16-byte, 16-aligned word.
// Failure atomicity: the word is written by one instruction, so a crash
// leaves either the old or the new 16 bytes (the crash simulator's models
// treat a 16-byte CAS as a declared multi-word store that may tear only at
// 8-byte boundaries when its line is written back separately).
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#if !defined(__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16)
#error "Ferrite needs an inline 16-byte CAS (x86-64 cmpxchg16b): build with -mcx16"
#endif

namespace ferrite::sync {

// A 16-byte value type T (trivially copyable, 16 bytes, 16-aligned).
template <class T>
concept DoubleWord = sizeof(T) == 16 && alignof(T) == 16 && std::is_trivially_copyable_v<T>;

template <DoubleWord T>
inline bool dwcas(T* p, T expected, T desired) {
  return __sync_bool_compare_and_swap(reinterpret_cast<unsigned __int128*>(p),
                                      std::bit_cast<unsigned __int128>(expected),
                                      std::bit_cast<unsigned __int128>(desired));
}
// An atomic 16-byte load: a CAS that changes nothing returns the current value.
template <DoubleWord T>
inline T dwload(T* p) {
  return std::bit_cast<T>(__sync_val_compare_and_swap(reinterpret_cast<unsigned __int128*>(p), 0, 0));
}
// An atomic 16-byte load that does not write the line: where dwload's CAS
// takes the line exclusive (two threads reading one word take turns owning
// it), this one shares it. On x86-64 processors that enumerate AVX, an
// aligned 16-byte SSE load (MOVDQA) is atomic: Intel SDM vol. 3A §9.1.1
// ("Guaranteed Atomic Operations"), AMD APM vol. 2 §7.3.2; GCC 13's
// libatomic loads 16 bytes the same way on such processors. Elsewhere it is
// dwload. Ordering: an x86 load (TSO: acquire); unlike dwload's locked
// instruction it is not a full fence, so a caller that needs a store before
// it ordered (StoreLoad) uses dwload. Under ThreadSanitizer, which does not
// see inline assembly, it is dwload.
inline const bool kAtomicVectorLoad = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") != 0;
}();
template <DoubleWord T>
inline T dwload_shared(T* p) {
#if defined(__SANITIZE_THREAD__)
  return dwload(p);
#else
  if (kAtomicVectorLoad) {
    using V [[gnu::vector_size(16)]] = long long;
    V v;
    asm volatile("movdqa %1, %0" : "=x"(v) : "m"(*reinterpret_cast<const V*>(p)) : "memory");
    return std::bit_cast<T>(v);
  }
  return dwload(p);
#endif
}
template <DoubleWord T>
inline void dwstore(T* p, T v) {
  T cur = dwload(p);
  while (!dwcas(p, cur, v)) cur = dwload(p);
}

}  // namespace ferrite::sync
