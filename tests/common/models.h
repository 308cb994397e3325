// tests/common/models.h — the persistency models a crash subject claims.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "ferrite/crash/campaign.h"
#include "ferrite/crash/model.h"
#include "ferrite/crash/subject.h"
#include "common/subjects.h"

namespace ferrite::test {

// Every model the variant claims to hold under (a broken one: to be caught
// under); SubjectInfo::models empty = the write-back models (abstract, x86:
// code that persists with pwbs). Code written for the store models (hops,
// hops+, strand: annotated stores) lists them in SubjectInfo::models.
inline std::vector<std::string> claimed_models(const crash::SubjectInfo& s) {
  return s.models.empty() ? crash::writeback_model_names() : s.models;
}

// A broken variant's campaign: `c` as given, and for a multi-threaded run up
// to 7 more seeds (3 + 1000 * round) until one catches it — a race needs the
// scheduler's help, and on a loaded machine one sampled run may miss the
// window. Each run should stop at its first catch (stop_after_violations).
inline crash::CampaignResult catch_with_seeds(const crash::SubjectInfo& s, crash::CampaignConfig c) {
  auto r = crash::run_campaign(s, c);
  for (int round = 1; c.threads > 1 && r.error.empty() && r.violations == 0 && round < 8; ++round) {
    c.seed = 3 + 1000 * static_cast<std::uint64_t>(round);
    r = crash::run_campaign(s, c);
  }
  return r;
}

// A broken variant's campaign `cfg` (its model set), which should stop at
// its first catch: asserted caught (when nothing is caught and `fallback` is
// given, that campaign decides instead: a step only another thread's
// write-backs expose) and printed with the first violation, tagged `tag`.
inline crash::CampaignResult expect_caught(const crash::SubjectInfo& s, const crash::CampaignConfig& cfg,
                                           const char* tag,
                                           const std::optional<crash::CampaignConfig>& fallback = std::nullopt) {
  auto r = crash::run_campaign(s, cfg);
  const crash::CampaignConfig* ran = &cfg;
  if (r.error.empty() && r.violations == 0 && fallback) {
    crash::CampaignConfig f = *fallback;
    f.model = cfg.model;
    r = crash::run_campaign(s, f);
    ran = &*fallback;
  }
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_GT(r.violations, 0u) << s.structure << "/" << s.variant << " was not caught under the " << cfg.model
                              << " model";
  std::printf("[%s] %s/%s [%s]: caught with %d thread(s), %llu violations in %llu images%s\n", tag,
              s.structure.c_str(), s.variant.c_str(), cfg.model.c_str(), ran->threads,
              static_cast<unsigned long long>(r.violations), static_cast<unsigned long long>(r.images_checked),
              r.details.empty() ? "" : ("; first: " + r.details[0].property + " [" + r.details[0].engine + "] " + r.details[0].reason).c_str());
  return r;
}

// Every broken variant registered for `structure`, under every model it
// claims: `base` with that model, caught (expect_caught). Returns how many
// variants are registered; the caller asserts how many it expects.
inline int expect_every_broken_variant_caught(const std::string& structure, const crash::CampaignConfig& base,
                                              const char* tag,
                                              const std::optional<crash::CampaignConfig>& fallback = std::nullopt) {
  int variants = 0;
  for (const auto& s : crash::subjects()) {
    if (s.structure != structure || !s.expect_violation) continue;
    ++variants;
    for (const auto& model : claimed_models(s)) {
      crash::CampaignConfig cfg = base;
      cfg.model = model;
      expect_caught(s, cfg, tag, fallback);
    }
  }
  return variants;
}

// A correct variant's single-thread campaign `cfg` (its model set): every
// verb a crash point, 0 violations, 0 inconclusive (an inconclusive image is
// never a pass); printed tagged `tag`. The result, for further checks.
inline crash::CampaignResult expect_every_point_clean(const crash::SubjectInfo& s, const crash::CampaignConfig& cfg,
                                                      const char* tag) {
  auto r = crash::run_campaign(s, cfg);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.violations, 0u) << describe(r);
  EXPECT_EQ(r.inconclusive, 0u) << describe(r);
  EXPECT_EQ(r.crash_points, r.verbs + 1) << "every verb must be a crash point";
  std::printf("[%s] %s/%s 1 thread [%s]: %zu ops, %llu crash points, %llu images checked, %llu violations, "
              "%llu inconclusive, %.1fs\n",
              tag, s.structure.c_str(), s.variant.c_str(), cfg.model.c_str(), cfg.ops,
              static_cast<unsigned long long>(r.crash_points), static_cast<unsigned long long>(r.images_checked),
              static_cast<unsigned long long>(r.violations), static_cast<unsigned long long>(r.inconclusive),
              r.seconds);
  return r;
}

// A correct variant's sampled several-thread campaigns: `base` (threads,
// ops, crash points, images, pool size and model set), run with the seeds
// base.seed + 100 * round until `want` images are built or `rounds` runs
// are done — crash points are sampled (each verb with probability
// points/verbs), so one run may fall a little short of the target and the
// next seeds make it up. Each run 0 violations; >= `want` images built and
// 0 inconclusive in all; printed tagged `tag`.
inline void expect_sampled_clean(const crash::SubjectInfo& s, const crash::CampaignConfig& base, std::uint64_t want,
                                 const char* tag, int rounds = 8) {
  SCOPED_TRACE("model " + base.model + ", " + std::to_string(base.threads) + " threads");
  std::uint64_t built = 0, checked = 0, points = 0, inconclusive = 0;
  double seconds = 0;
  for (int round = 0; built < want && round < rounds; ++round) {
    crash::CampaignConfig cfg = base;
    cfg.seed = base.seed + 100 * static_cast<std::uint64_t>(round);
    auto r = crash::run_campaign(s, cfg);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_EQ(r.violations, 0u) << "seed " << cfg.seed << describe(r);
    built += r.images_built;
    checked += r.images_checked;
    points += r.crash_points;
    inconclusive += r.inconclusive;
    seconds += r.seconds;
  }
  EXPECT_GE(built, want);
  EXPECT_EQ(inconclusive, 0u);  // an inconclusive image is never a pass
  std::printf("[%s] %s/%s %d threads [%s]: %llu crash points, %llu images built, %llu checked, 0 violations, "
              "%llu inconclusive, %.1fs\n",
              tag, s.structure.c_str(), s.variant.c_str(), base.threads, base.model.c_str(),
              static_cast<unsigned long long>(points), static_cast<unsigned long long>(built),
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(inconclusive), seconds);
}

}  // namespace ferrite::test
