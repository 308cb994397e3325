// src/pmem/recover.cc — pool-level recovery: one recovery for the whole
// pool (docs/pool-format.md "Recovery").
//
// Every named root is looked up in the root-type registry
// (pmem/root_registry.h) by its (type tag, type version). The hooks of the
// known roots run (each may repair its structure and marks its live
// blocks), inside ONE Heap::recover_by_trace, so the heap is rebuilt once
// from the union of everything marked. A root of an unknown type, a root
// whose size is not its registered type's, or a hook that throws means some
// live blocks may be unmarked: the heap is then not rebuilt at all (every
// block of an assigned chunk stays allocated: a leak, never a loss).
//
// Crash consistency: the hooks' repairs are idempotent and the heap rebuild
// only returns chunks without a live block (heap.cc), so recovery
// interrupted by a crash simply runs again at the next open.
#include <exception>
#include <string>
#include <unordered_set>
#include <utility>

#include "ferrite/pmem/root_registry.h"
#include "internal.h"

namespace ferrite::pmem {

namespace {
// Thrown out of the trace callback to abandon the rebuild (the heap's
// recover changes nothing when the trace throws).
struct AbandonRebuild {};

std::string describe_root(const layout::RootEntry& r) {
  return std::string(r.name) + " (" + (r.type_name[0] != '\0' ? r.type_name : "unnamed type") + ", tag " +
         detail::hex(r.type_tag) + ", version " + std::to_string(r.type_version) + ")";
}
}  // namespace

const RecoveryReport* Pool::recovery_report() const {
  std::lock_guard<std::mutex> g(impl_->recover_mu);
  return impl_->report.get();
}

const RecoveryReport& Pool::recover() {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> g(im.recover_mu);
  if (im.report) return *im.report;

  std::vector<layout::RootEntry> roots;
  {
    std::lock_guard<std::mutex> rg(im.root_mu);
    for (const auto& r : im.hdr.roots)
      if (r.in_use) roots.push_back(r);
  }
  auto rep = std::make_unique<RecoveryReport>();
  rep->header = im.health;
  rep->roots = roots.size();
  struct Known {
    const layout::RootEntry* entry;
    RootTypeEntry type;
  };
  std::vector<Known> known;
  for (const auto& r : roots) {
    RootTypeEntry t;
    if (!find_root_type(r.type_tag, r.type_version, &t)) {
      rep->unknown_roots.push_back(describe_root(r));
      continue;
    }
    if (t.size != r.size) {
      rep->failed_roots.push_back(std::string(r.name) + ": stored size " + std::to_string(r.size) +
                                  " is not the registered type's " + std::to_string(t.size) + " bytes (" +
                                  t.type_name + ")");
      continue;
    }
    known.push_back(Known{&r, std::move(t)});
  }

  // Runs every known root's hook with `mark`; records failures and what
  // each hook marked (RecoveryReport::root_use).
  auto run_hooks = [&](const std::function<void(void*)>& mark) {
    rep->root_use.clear();
    for (const Known& k : known) {
      RecoveryReport::RootUse use{k.entry->name};
      std::unordered_set<const void*> seen;
      const void* own = im.base + k.entry->offset;
      std::size_t own_size = 0;
      own = im.heap.block_containing(own, &own_size);
      // Counted only for the deep check (check_only: `ferrite info`); an
      // ordinary open pays no lookup per mark.
      const bool count = im.opts.check_only;
      const std::function<void(void*)> counting = [&](void* p) {
        mark(p);
        if (!count || p == nullptr) return;
        std::size_t n = 0;
        const void* b = im.heap.block_containing(p, &n);
        if (b == nullptr || b == own || !seen.insert(b).second) return;
        ++use.blocks;
        use.bytes += n;
      };
      try {
        k.type.hook(*this, im.base + k.entry->offset, counting);
        ++rep->roots_traced;
        rep->root_use.push_back(std::move(use));
      } catch (const std::exception& e) {
        rep->failed_roots.push_back(std::string(k.entry->name) + ": " + e.what());
      } catch (...) {
        rep->failed_roots.push_back(std::string(k.entry->name) + ": recover hook threw");
      }
    }
  };

  const bool was_recovered = im.heap.recovered();
  if (!rep->unknown_roots.empty() || !rep->failed_roots.empty() || was_recovered) {
    // No rebuild: repairs still run (attach may rely on them), marks are
    // dropped.
    run_hooks([](void*) {});
  } else {
    try {
      im.heap.recover_by_trace([&](const std::function<void(void*)>& mark) {
        run_hooks(mark);
        if (!rep->failed_roots.empty()) throw AbandonRebuild{};
      });
      rep->heap_rebuilt = true;
    } catch (const AbandonRebuild&) {
      rep->heap_rebuilt = false;
    }
  }
  im.report = std::move(rep);
  return *im.report;
}

}  // namespace ferrite::pmem
