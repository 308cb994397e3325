// tests/logging/campaign_checks.h — what the logging crash suites assert of
// a correct campaign (no setup error, 0 violations, 0 inconclusive) and how
// they print counters.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/subjects.h"
#include "ferrite/crash/campaign.h"

namespace ferrite::test::logging {

inline unsigned long long ull(std::uint64_t v) { return static_cast<unsigned long long>(v); }

inline void expect_clean(const crash::CampaignResult& r, const std::string& what) {
  ASSERT_TRUE(r.error.empty()) << what << ": " << r.error;
  EXPECT_EQ(r.violations, 0u) << what << describe(r);
  EXPECT_EQ(r.inconclusive, 0u) << what << describe(r);  // an inconclusive image is never a pass
}

}  // namespace ferrite::test::logging
