// tests/common/models.h — the persistency models a crash subject claims.
#pragma once

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

}  // namespace ferrite::test
