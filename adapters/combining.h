// adapters/combining.h — what every PBcomb/PWFcomb adapter shares: the
// structures speak the vocabulary themselves (apply/recover on op::Op,
// combining/*.h), all are detectable and report their combining degree. An
// adapter adds create, attach and observe (the structure's own names).
#pragma once

#include <memory>

#include "adapter.h"

namespace ferrite::adapters {

// The PWFcomb broken variants' descriptions (one fault, several structures).
inline constexpr const char* kPWFNoHelperPwb =
    "served threads return without making S durable (Alg. 4 l.44-46 removed)";
inline constexpr const char* kPWFNoPfence = "no pfence between the StateRec's pwb and the SC on S (Alg. 4 l.29 removed)";
inline constexpr const char* kPWFNoIndex = "Index[p] kept in DRAM, not persisted with the StateRec (Alg. 4 l.27-28)";

// Registrations of Ferrite's own combining techniques, one line each.
inline Registration ferrite_technique(const char* technique, const char* family, const char* description,
                                      std::size_t pool_size = std::size_t{256} << 20) {
  return {.technique = technique, .family = family, .origin = Origin::kFerrite, .description = description,
          .pool_size = pool_size};
}
inline Registration ferrite_broken(const char* technique, const char* family, const char* variant,
                                   const char* description) {
  return {.technique = technique, .variant = variant, .family = family, .origin = Origin::kFerrite,
          .broken = true, .description = description};
}
inline Registration ferrite_ablation(const char* technique, const char* family, const char* variant,
                                     const char* description, std::size_t pool_size = std::size_t{256} << 20) {
  return {.technique = technique, .variant = variant, .family = family, .origin = Origin::kFerrite,
          .ablation = true, .description = description, .pool_size = pool_size};
}

template <class S, op::Abstract A, int kReattach = 0>
struct Combining {
  using Handle = std::unique_ptr<S>;
  static constexpr op::Abstract kAbstract = A;
  static constexpr bool kDetectable = true;
  // > 0: single-threaded campaigns re-attach before every kReattach-th
  // operation (a restart at a quiescent point; what exposes PWFcomb's Index
  // bug of the paper's §4).
  static constexpr int kReattachEvery = kReattach;

  static op::Response apply(Handle& h, int tid, std::uint64_t seq, const op::Op& o) { return h->apply(tid, seq, o); }
  static op::Response recover(Handle& h, int tid, std::uint64_t seq, const op::Op& o) {
    return h->recover(tid, seq, o);
  }
  static double combining_degree(const Handle& h) { return h->combining_degree(); }
};

}  // namespace ferrite::adapters
