// tests/baselines/broken_checks.h — the broken-variant check (and the
// recovery-campaign report line) shared by the
// set/map competitors' crash tests (durable_sets_crash_test.cc,
// durable_ordered_crash_test.cc): under every model the variant claims, a
// campaign (1 thread: 100 ops; more: every crash point of 200 ops, more
// seeds until one catches it) must report a violation.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/models.h"
#include "common/sanitizer.h"
#include "common/scale.h"
#include "common/subjects.h"
#include "ferrite/crash/campaign.h"

namespace ferrite::test {

struct BrokenCase {
  const char* structure;
  const char* variant;
  int threads;  // the smallest run that exposes it
  crash::CampaignConfig::Schedule schedule = crash::CampaignConfig::Schedule::kRandom;
  bool full_only = false;  // too slow for CI: run with the suite's full-campaign switch
};

// `tag` prefixes the printed line, e.g. "[durable-sets]".
inline void expect_broken_caught(const BrokenCase& p, const char* tag) {
  const auto& s = subject(p.structure, p.variant);
  ASSERT_TRUE(s.expect_violation);
  for (const auto& model : claimed_models(s)) {
    SCOPED_TRACE("model " + model);
    crash::CampaignConfig cfg;
    cfg.threads = p.threads;
    cfg.ops = p.threads == 1 ? scaled(100, 60) : 200;
    cfg.images = 6;
    cfg.seed = 3;
    cfg.pool_size = 2u << 20;
    cfg.model = model;
    if (p.threads > 1) cfg.crash_points = 1u << 20;  // every verb (the run stops at the first catch)
    cfg.stop_after_violations = 1;
    cfg.schedule = p.schedule;
    auto r = catch_with_seeds(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_GE(r.violations, 1u) << p.structure << "/" << p.variant << " not caught under " << model;
    const auto& v = r.details.front();
    std::printf("%s %s/%s %d thread(s) [%s] caught (seed %llu, %llu images): %s %s\n  replay: %s\n", tag, p.structure,
                p.variant, p.threads, model.c_str(), static_cast<unsigned long long>(r.seed),
                static_cast<unsigned long long>(r.images_checked), v.property.c_str(), v.reason.c_str(),
                v.replay.c_str());
  }
}

// The line a crash-create / crashed-recovery campaign prints.
inline void print_recovery_campaign(const char* tag, const crash::SubjectInfo& s, const std::string& model,
                                    const crash::CampaignResult& r) {
  std::printf("%s %s/%s crash-create + recovery crashes [%s]: %llu create points, %llu crash "
              "points, %llu images, %llu nested images, %llu violations, %llu inconclusive\n",
              tag, s.structure.c_str(), s.variant.c_str(), model.c_str(),
              static_cast<unsigned long long>(r.create_points), static_cast<unsigned long long>(r.crash_points),
              static_cast<unsigned long long>(r.images_checked), static_cast<unsigned long long>(r.nested_images),
              static_cast<unsigned long long>(r.violations), static_cast<unsigned long long>(r.inconclusive));
}

inline std::string broken_case_name(const ::testing::TestParamInfo<BrokenCase>& i) {
  std::string s = std::string(i.param.structure) + "_" + i.param.variant;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

}  // namespace ferrite::test
