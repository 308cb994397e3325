// ferrite/combining/validate.h — what the combining structures' recovery
// hooks and attach paths check before they follow a persistent pointer
// (issue 40: "Open never segfaults on a damaged pool"; docs/pool-format.md
// "Recovery", docs/combining.md "Validation").
//
// What it is. A recovery hook runs on whatever the file holds: a flipped
// bit in a StateRec pointer, a node pointer, a thread count or a heap size
// must make the hook throw pmem::PoolError(kCorrupt) naming the structure
// and the offset of the damaged word (the pool then keeps every block and
// leaves the root closed: PoolOptions::damaged_roots), never read outside
// the pool, never loop. These helpers are the checks every hook shares:
//  * Damage::fail — the one message: "<who>: <what>: the word at offset
//    0x<off> holds 0x<value>" (offsets from the pool's base).
//  * pbcomb_checked_state — a PBcomb instance's root (PBCombRoot) before
//    pbcomb_current_state reads it: a thread count in [1, kMaxCheckedThreads],
//    a known tag kind and design, a record size that covers the layout,
//    both StateRecs inside the pool, 8-aligned and starting heap blocks of
//    at least rec_bytes; then the current record (a record that does not
//    verify is damage too).
//  * node_ok — a node pointer: inside the pool, aligned, the start of a
//    heap block of at least the node's size.
//
// Thread safety: pure functions of quiescent persistent memory (recovery,
// attach); they write nothing.
//
// Invariants. A check never dereferences a pointer before it has passed
// pool.contains for the bytes read; a walk is bounded by a visited set (a
// cycle is damage) — a list can have at most pool.size() / node size nodes.
//
// Persistence, recovery: none of their own (read only).
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "ferrite/combining/pbcomb.h"
#include "ferrite/pmem/pool.h"

namespace ferrite::combining {

// A capacity no structure is created with (PWFcomb's maximum is 64; PBcomb
// instances in practice <= a few hundred): a larger stored count is a
// damaged word, and bounding it keeps RecLayout's arithmetic small.
inline constexpr std::uint32_t kMaxCheckedThreads = 1u << 16;

struct Damage {
  const pmem::Pool& pool;
  const char* who;  // "PBStack", ...

  std::string offset_of(const void* p) const {
    const auto off = reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(pool.base());
    char b[24];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(off));
    return b;
  }
  // `where`: the pool address of the damaged word; `value`: what it holds.
  [[noreturn]] void fail(const std::string& what, const void* where, std::uint64_t value) const {
    char v[24];
    std::snprintf(v, sizeof v, "0x%llx", static_cast<unsigned long long>(value));
    throw pmem::PoolError(pmem::Errc::kCorrupt,
                          std::string(who) + ": " + what + ": the word at offset " + offset_of(where) + " holds " + v);
  }
  [[noreturn]] void fail(const std::string& what, const void* where, const void* value) const {
    fail(what, where, static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(value)));
  }

  // Is p (of a block that holds `bytes`) a node: in the pool, `align`-
  // aligned, the start of a heap block of at least `bytes`?
  bool block_ok(const void* p, std::size_t bytes, std::size_t align = 8) const {
    return p != nullptr && reinterpret_cast<std::uintptr_t>(p) % align == 0 && pool.contains(p, bytes) &&
           pool.heap().block_at(p) >= bytes;
  }
};

// A PBcomb instance's root, checked (see the file comment); returns the
// current record's state. `root_obj`: the structure's root object (named in
// no message; the pool's report prefixes the root's name).
inline void* pbcomb_checked_state(const Damage& d, const PBCombRoot& r) {
  if (r.threads == 0 || r.threads > kMaxCheckedThreads) d.fail("the thread capacity is implausible", &r.threads, r.threads);
  if (r.tag_kind != static_cast<std::uint32_t>(TagKind::kBit) && r.tag_kind != static_cast<std::uint32_t>(TagKind::kSeq))
    d.fail("unknown tag kind", &r.tag_kind, r.tag_kind);
  if (r.design != PBCombRoot::kDesignPaper && r.design != PBCombRoot::kDesignStamped)
    d.fail("unknown round design", &r.design, r.design);
  if (r.state_bytes > RecLayout::kMaxLen || r.state_bytes > d.pool.size())
    d.fail("the state size is implausible", &r.state_bytes, r.state_bytes);
  const RecLayout l{static_cast<int>(r.threads), static_cast<TagKind>(r.tag_kind), r.state_bytes};
  if (r.rec_bytes < l.total() || r.rec_bytes > d.pool.size())
    d.fail("the StateRec size does not cover the layout", &r.rec_bytes, r.rec_bytes);
  for (void* const& rec : r.rec)
    if (!d.block_ok(rec, static_cast<std::size_t>(r.rec_bytes)))
      d.fail("a StateRec pointer names no StateRec block", &rec, rec);
  if (r.design == PBCombRoot::kDesignPaper && r.mindex.load(std::memory_order_relaxed) > 1)
    d.fail("MIndex is neither 0 nor 1", &r.mindex, r.mindex.load(std::memory_order_relaxed));
  if (r.design == PBCombRoot::kDesignStamped && pbcomb_stamped_current(r, l) < 0)
    d.fail("no StateRec verifies (stamp and checksum)", &r.rec[0], r.rec[0]);
  return pbcomb_current_state(r);  // cannot throw now: every condition it checks holds
}

}  // namespace ferrite::combining
