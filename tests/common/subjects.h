// tests/common/subjects.h — what every crash-campaign test needs: a
// registered subject by name, a readable account of a campaign's
// violations, and the (structure, variant) parameter of the suites that run
// one campaign per variant.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "ferrite/crash/campaign.h"

namespace ferrite::test {

// The registered subject `structure`/`variant`; throws if there is none.
inline const crash::SubjectInfo& subject(const std::string& structure, const std::string& variant) {
  const auto* info = crash::find_subject(structure, variant);
  if (info == nullptr) throw std::runtime_error(structure + "/" + variant + " not registered");
  return *info;
}

// The campaign's error and every recorded violation: crash point, image,
// property, checker engine, reason, how the image was made, replay line.
inline std::string describe(const crash::CampaignResult& r) {
  std::string s = r.error;
  for (const auto& v : r.details)
    s += "\n  k=" + std::to_string(v.k) + " image " + std::to_string(v.image) + " " + v.property + " [" +
         v.engine + "] " + v.reason + " (" + v.image_how + ")\n  " + v.replay;
  return s;
}

// One (structure, variant) per instance of a parameterized suite.
struct Case {
  const char* structure;
  const char* variant;
};
inline std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  std::string s = std::string(i.param.structure) + "_" + i.param.variant;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

}  // namespace ferrite::test
