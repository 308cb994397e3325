#include "technique.h"

#include <bit>
#include <stdexcept>

namespace ferrite::bench {

std::string structure_name(Structure s) { return std::string(op::abstract_name(s)); }

bool parse_structure(const std::string& text, Structure* out) { return op::parse_abstract(text, out); }

void Instance::insert(int tid, std::uint64_t seq, std::int64_t v) {
  const std::int64_t arg =
      structure_ == Structure::kRegister ? std::bit_cast<std::int64_t>(atomic_float_factor(v)) : v;
  apply(tid, seq, op::Op{op::insert_kind(structure_), arg, v});
}

bool Instance::remove(int tid, std::uint64_t seq, std::int64_t* out) {
  const auto r = apply(tid, seq, op::Op{op::remove_kind(structure_), 0, 0});
  if (r.has_value && out != nullptr) *out = r.value;
  return r.has_value;
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
