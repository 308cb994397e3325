// The crash-subject registry (crash/subject.h).
#include <algorithm>
#include <stdexcept>

#include "ferrite/crash/subject.h"

namespace ferrite::crash {

std::vector<SubjectInfo>& subjects() {
  static std::vector<SubjectInfo> all;
  return all;
}

bool register_subject(SubjectInfo info) {
  if (info.structure.empty() || info.variant.empty() || !info.make)
    throw std::invalid_argument("crash subject registration needs a structure, a variant and a factory");
  if (find_subject(info.structure, info.variant) != nullptr)
    throw std::logic_error("crash subject " + info.structure + "/" + info.variant + " registered twice");
  subjects().push_back(std::move(info));
  return true;
}

const SubjectInfo* find_subject(const std::string& structure, const std::string& variant) {
  for (const auto& s : subjects())
    if (s.structure == structure && s.variant == variant) return &s;
  return nullptr;
}

}  // namespace ferrite::crash
