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

}  // namespace ferrite::test
