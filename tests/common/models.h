// tests/common/models.h — the persistency models a crash subject claims.
#pragma once

#include <string>
#include <vector>

#include "ferrite/crash/model.h"
#include "ferrite/crash/subject.h"

namespace ferrite::test {

// Every model the variant claims to hold under (a broken one: to be caught
// under); SubjectInfo::models empty = every registered model.
inline std::vector<std::string> claimed_models(const crash::SubjectInfo& s) {
  return s.models.empty() ? crash::model_names() : s.models;
}

}  // namespace ferrite::test
