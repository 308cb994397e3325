// tests/logging/campaign_checks.h — what the logging crash suites assert of
// a correct campaign (no setup error, 0 violations, 0 inconclusive) and how
// they print counters.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/models.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"

namespace ferrite::test::logging {

inline unsigned long long ull(std::uint64_t v) { return static_cast<unsigned long long>(v); }

inline void expect_clean(const crash::CampaignResult& r, const std::string& what) {
  ASSERT_TRUE(r.error.empty()) << what << ": " << r.error;
  EXPECT_EQ(r.violations, 0u) << what << describe(r);
  EXPECT_EQ(r.inconclusive, 0u) << what << describe(r);  // an inconclusive image is never a pass
}

// The logging suites' campaign shape: `model`, `ops`, `images` per crash
// point, `seed`, a 2 MiB pool (every crash point unless the caller samples).
inline crash::CampaignConfig config(const std::string& model, std::size_t ops, int images, std::uint64_t seed) {
  crash::CampaignConfig cfg;
  cfg.model = model;
  cfg.ops = ops;
  cfg.images = images;
  cfg.seed = seed;
  cfg.pool_size = std::size_t{2} << 20;
  return cfg;
}

// A broken variant's campaign under `model`, stopped at its first catch,
// asserted caught and printed with the first violation.
inline crash::CampaignResult expect_caught(const crash::SubjectInfo& s, const std::string& model, std::size_t ops,
                                           int images, const char* tag) {
  crash::CampaignConfig cfg = config(model, ops, images, 29);
  cfg.max_details = 1;
  cfg.stop_after_violations = 1;  // the verdict is the first catch
  return ferrite::test::expect_caught(s, cfg, tag);
}

}  // namespace ferrite::test::logging
