// tools/ferrite/pool_header.h — how `ferrite check` and `ferrite info` show
// the state of a pool's two header slots (pmem::HeaderHealth), in text and
// JSON, from one place.
#pragma once

#include <nlohmann/json.hpp>

#include "ferrite/pmem/pool.h"

namespace ferrite::cli {

// Whether the header state is sound: both slots agree, or a crash left an
// update to complete (open completes it). kRepaired / kFellBack name damage.
inline bool header_sound(const pmem::HeaderHealth& h) {
  return h.state == pmem::HeaderState::kInSync || h.state == pmem::HeaderState::kCompleted;
}

inline nlohmann::json header_json(const pmem::HeaderHealth& h) {
  nlohmann::json j;
  j["state"] = std::string(pmem::header_state_name(h.state));
  j["slot"] = h.slot;
  j["generation"] = h.generation;
  j["other_generation"] = h.other_generation;
  j["other_problem"] = h.other_problem;
  j["roots_only_in_other"] = h.roots_only_in_other;
  j["roots_only_in_force"] = h.roots_only_in_force;
  j["message"] = h.message;
  return j;
}

}  // namespace ferrite::cli
