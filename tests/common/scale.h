// tests/common/scale.h — the test scale: FERRITE_TEST_SCALE (default 1; the
// sanitizer presets set 0.1) multiplies the iteration counts of the long
// tests. scaled(n, min) never goes below min.
#pragma once

#include <cstdlib>
#include <type_traits>

namespace ferrite::test {

inline double scale() {
  const char* s = std::getenv("FERRITE_TEST_SCALE");
  if (s == nullptr) return 1.0;
  const double v = std::atof(s);
  return v > 0 ? v : 1.0;
}

template <class T>
T scaled(T n, std::type_identity_t<T> min = 1) {
  const T v = static_cast<T>(static_cast<double>(n) * scale());
  return v < min ? min : v;
}

}  // namespace ferrite::test
