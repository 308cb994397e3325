#include "technique.h"

#include <stdexcept>

namespace ferrite::bench {

std::string structure_name(Structure s) {
  switch (s) {
    case Structure::kAtomicFloat: return "atomic-float";
    case Structure::kStack: return "stack";
    case Structure::kQueue: return "queue";
    case Structure::kHeap: return "heap";
    case Structure::kSet: return "set";
    case Structure::kMap: return "map";
  }
  return "?";
}

bool parse_structure(const std::string& text, Structure* out) {
  for (Structure s : {Structure::kAtomicFloat, Structure::kStack, Structure::kQueue, Structure::kHeap,
                      Structure::kSet, Structure::kMap})
    if (structure_name(s) == text) { *out = s; return true; }
  return false;
}

std::vector<Technique>& techniques() {
  static std::vector<Technique> all;
  return all;
}

bool register_technique(Technique t) {
  if (find_technique(t.structure, t.name) != nullptr)
    throw std::logic_error("technique registered twice: " + t.name);
  techniques().push_back(std::move(t));
  return true;
}

const Technique* find_technique(Structure s, const std::string& name) {
  for (const auto& t : techniques())
    if (t.structure == s && t.name == name) return &t;
  return nullptr;
}

}  // namespace ferrite::bench
