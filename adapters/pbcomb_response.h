// adapters/pbcomb_response.h — PBcomb's response words (combining/common.h)
// as the vocabulary's responses: pops, dequeues and delete-mins answer a
// value or empty; pushes, enqueues and inserts answer an ack even when the
// acked word happens to equal a value (0).
#pragma once

#include <cstdint>

#include "ferrite/combining/common.h"
#include "ferrite/op.h"

namespace ferrite::adapters {

inline op::Response pbcomb_response(std::int32_t kind, std::uint64_t w) {
  if (kind == op::kPush || kind == op::kEnqueue || kind == op::kInsert) return op::Response::ack();
  if (!combining::is_value_word(w)) return op::Response::none();
  return op::Response::of(combining::word_value(w));
}

}  // namespace ferrite::adapters
