// ferrite/pmem/root_registry.h — the root-type registry: how a pool
// recovers structures it knows only by their roots.
//
// What it is. A process-wide table keyed by a root type's (kTypeTag,
// kTypeVersion) that holds the type's recover hook
//
//   void hook(Pool& pool, T* root, const std::function<void(void*)>& mark);
//
// Pool::recover (run by Pool::open) calls the hook of every named root of
// the pool. The hook may first repair the structure's persistent state —
// idempotently: recovery can itself be interrupted by a crash and run again,
// and the structure's attach may repeat the repair — and must then call
// mark(p) for every heap block the structure still uses (p = the pointer
// Heap::alloc returned, or any address inside the block; null and addresses
// outside the heap are ignored; the root object itself is always kept). The
// hook must rely only on the pool's contents, never on DRAM state of the
// run that crashed. Throwing (e.g. on a corrupt structure) makes the pool
// keep every block (see RecoveryReport::failed_roots).
//
// Registration. Each durable structure's header registers its root type
// right after the class, with an inline variable, so every program that can
// attach the structure (it includes the header) knows the hook before main:
//
//   inline const bool kPBQueueRootRegistered =
//       pmem::register_root_type<PBQueueRoot>(&PBQueue<>::recover_root);
//
// A structure templated on fault injection registers the hook of its
// correct instantiation (the trace does not depend on the faults).
// Registering the same (tag, version) again with the same type (size and
// type name) is a no-op that returns true; a different type under a taken
// (tag, version) keeps the first registration and returns false.
//
// Thread safety: registration and lookup are serialized by a mutex; the
// table is a function-local static (safe to use from other translation
// units' static initializers). Entries are never removed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ferrite/pmem/pool.h"

namespace ferrite::pmem {

// One registered root type. `hook` receives the root as void* (a T*).
struct RootTypeEntry {
  std::uint32_t tag = 0;
  std::uint32_t version = 0;
  std::size_t size = 0;   // sizeof(T): a root of another size is not this type
  std::string type_name;  // T::kTypeName, or ""
  std::function<void(Pool&, void*, const std::function<void(void*)>&)> hook;
};

// Registers `entry` (see above for duplicates). Prefer register_root_type.
bool register_root_type_entry(RootTypeEntry entry);
// The entry for (tag, version), or false. Copies it out (the table may grow
// concurrently).
bool find_root_type(std::uint32_t tag, std::uint32_t version, RootTypeEntry* out);
// Every registered type (for tools and tests), in registration order.
std::vector<RootTypeEntry> registered_root_types();
// Registrations refused because another type holds their (tag, version):
// "tag 0x... version v: 'A' (n bytes) refused, 'B' (m bytes) holds it".
// A program that links every structure must see none (a pool of the refused
// type would be recovered by the other type's hook).
std::vector<std::string> root_type_conflicts();

template <RootType T>
bool register_root_type(void (*hook)(Pool&, T*, const std::function<void(void*)>& mark)) {
  RootTypeEntry e;
  e.tag = T::kTypeTag;
  e.version = T::kTypeVersion;
  e.size = sizeof(T);
  if constexpr (requires { T::kTypeName; }) e.type_name = T::kTypeName;
  e.hook = [hook](Pool& pool, void* root, const std::function<void(void*)>& mark) {
    hook(pool, static_cast<T*>(root), mark);
  };
  return register_root_type_entry(std::move(e));
}

}  // namespace ferrite::pmem
