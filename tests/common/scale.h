// tests/common/scale.h — the test scale: FERRITE_TEST_SCALE (default 1; the
// sanitizer presets set 0.1) multiplies the iteration counts of the long
// tests. scaled(n, min) never goes below min.
#pragma once

#include <cstddef>
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

// CampaignConfig::create_crash_points for a correct variant's campaign
// with crash_create: every verb inside creation (0) at scale 1, a sample of
// about 1000 x scale + 1 of them below (101 under the sanitizer presets).
// Creation is the same code in every campaign of a structure; the release
// pass explores all of it. Mutation and broken-variant campaigns keep
// every point (what they must catch may sit at any one).
inline std::size_t create_points() {
  const double s = scale();
  return s >= 1.0 ? 0 : static_cast<std::size_t>(1000.0 * s) + 1;
}

}  // namespace ferrite::test
