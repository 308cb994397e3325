// adapters/montage_map.h — the one adapter of the nbMontage maps (Michael's
// hash table, the Shalev–Shavit split-ordered table, the Natarajan–Mittal
// BST, the skip list), for `ferrite crashtest` (buffered durable
// linearizability) and `ferrite bench`
// (get:insert:remove mixes: insert = put, remove = erase).
//
// The maps share their interface (create/attach with options and the epoch
// options, put/get/erase/sync/contents), the crash workload and the epoch
// system's broken variants; an adapter file names its structure through a
// traits type T:
//
//   struct T {
//     template <unsigned F, class S = montage::EpochSys<F>>
//     using Map = montage::Bst<F, S>;                       // the structure on system S
//     static constexpr const char* kName = "montage-bst";  // technique name
//     static montage::BstOptions options(const Setup&);    // its options
//     template <unsigned F, class S = ...> using WideMap = ...;  // optional: the structure
//   };                                                     // with 32-byte keys (Key32)
//
// A structure with a WideMap takes `ferrite bench --key-size 32` (bench
// only: the crash campaigns run the 8-byte map); one without refuses it.
//
// and registers it with register_montage_map<T>(description), which also
// registers its transient original, `<kName>-dram` (bench only): the same
// structure on montage::TransientSys, payloads in DRAM and plain CASes
// (the paper's DRAM (T), montage/transient_sys.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "adapter.h"
#include "ferrite/key32.h"
#include "montage_common.h"
#include "ferrite/montage/internal/faults.h"
#include "ferrite/montage/transient_sys.h"

namespace ferrite::adapters {

template <class T>
concept HasWideMap = requires { typename T::template WideMap<0>; };
struct NoWideMap {};
template <class T, unsigned F, class S>
struct WideMapOf {
  using type = NoWideMap;
};
// Only the correct variant has one: the broken variants are for the crash
// campaigns, which run 8-byte keys (each wide map is a whole structure's
// instantiation, compile time the tests would pay for nothing).
template <class T, unsigned F, class S>
  requires(HasWideMap<T> && F == montage::fault::kNone)
struct WideMapOf<T, F, S> {
  using type = typename T::template WideMap<F, S>;
};

// S: montage::EpochSys<F> (the nbMontage structure: a pool, crash-tested)
// or montage::TransientSys (its transient original: no pool, bench only).
template <class T, unsigned F, class S = montage::EpochSys<F>>
struct MontageMap {
  using Map = typename T::template Map<F, S>;
  using Wide = typename WideMapOf<T, F, S>::type;
  // One of the two: the 8-byte map, or (bench, --key-size 32) the map on
  // Key32::from(the operation's key).
  struct Handle {
    std::unique_ptr<Map> narrow;
    std::unique_ptr<Wide> wide;
  };
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;
  static constexpr bool kDetectable = false;
  static constexpr bool kBuffered = S::kPersistent;
  static constexpr bool kWideKeys = !std::is_same_v<Wide, NoWideMap>;

  template <class M>
  static std::unique_ptr<M> make(pmem::Pool* pool, const Setup& s) {
    if constexpr (S::kPersistent) return M::create(*pool, s.name, s.threads, T::options(s), montage_epoch_options(*pool, s));
    else return M::create(s.threads, T::options(s));
  }
  static Handle create(pmem::Pool* pool, const Setup& s) {
    Handle h;
    if (s.key_size == 32) {
      if constexpr (kWideKeys)
        h.wide = make<Wide>(pool, s);
      else
        throw std::invalid_argument(std::string(T::kName) + " does not take 32-byte keys");
    } else {
      h.narrow = make<Map>(pool, s);
    }
    return h;
  }
  static Handle attach(pmem::Pool& pool, const Setup& s) {
    if constexpr (S::kPersistent) {
      if (s.key_size != 8) throw std::invalid_argument(std::string(T::kName) + ": attach takes 8-byte keys only");
      Handle h;
      h.narrow = Map::attach(pool, s.name, s.threads, T::options(s), montage_epoch_options(pool, s));
      return h;
    } else {
      throw std::logic_error("a transient technique has nothing to attach to");
    }
  }
  template <class M, class K>
  static op::Response run(M& m, int tid, const op::Op& o, const K& key) {
    switch (o.kind) {
      case op::kPut: return op::Response::from(m.put(tid, key, o.arg2));
      case op::kGet: return op::Response::from(m.get(tid, key));
      case op::kErase: return op::Response::from(m.erase(tid, key));
      case op::kSync: m.sync(); return op::Response::ack();
      default: unsupported(T::kName, o);
    }
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    if constexpr (kWideKeys)
      if (h.wide) return run(*h.wide, tid, o, Key32::from(o.arg));
    return run(*h.narrow, tid, o, o.arg);
  }
  static std::vector<std::int64_t> observe(Handle& h) {
    std::vector<std::int64_t> out;
    for (const auto& [k, v] : h.narrow->contents()) {
      out.push_back(k);
      out.push_back(v);
    }
    return out;
  }
  // The crash workload: 40% put, 30% erase, 20% get over 4 keys (threads
  // meet on the same keys: replace races, doomed attempts), 10% sync.
  static op::Op next_op(int tid, std::uint64_t& rng, Workload& w) {
    const auto r = Workload::step(rng);
    const auto key = static_cast<std::int64_t>((r >> 4) % 4 + 1);
    const auto c = r % 10;
    if (c < 4) return {op::kPut, key, w.unique(tid)};
    if (c < 7) return {op::kErase, key, 0};
    if (c < 9) return {op::kGet, key, 0};
    return {op::kSync, 0, 0};
  }
};

// Registers T's correct variant and the epoch system's broken variants.
// fault::kNoEpochRestore is not registered: recovery's durable resets of the
// blocks it rejects make the restore redundant (docs/montage.md D14); neither
// the campaigns with crashes during recovery nor those with a second crash
// after new operations catch it. What the second crash catches is the
// resets' omission (no-recovery-reset).
template <class T>
bool register_montage_map(const char* description) {
  namespace mf = montage::fault;
  auto broken = [](const char* variant, const char* why) {
    return Registration{.technique = T::kName, .variant = variant, .family = "montage",
                        .origin = Origin::kFerrite, .broken = true, .description = why};
  };
  register_adapter<MontageMap<T, mf::kNone>>(Registration{.technique = T::kName, .family = "montage",
                                                          .origin = Origin::kFerrite, .description = description,
                                                          .wide_keys = HasWideMap<T>,
                                                          .pool_size = std::size_t{1} << 30});
  // The transient original (the paper's DRAM (T)): bench only, no pool.
  register_adapter<MontageMap<T, mf::kNone, montage::TransientSys>>(
      Registration{.technique = std::string(T::kName) + "-dram", .family = "montage", .origin = Origin::kTransient,
                   .description = std::string("transient original of ") + T::kName +
                                  " (the paper's DRAM (T)): the same code on TransientSys, payloads in DRAM, plain "
                                  "CAS, no epochs",
                   .wide_keys = HasWideMap<T>, .crash = false, .needs_pool = false, .pool_size = 0});
  register_adapter<MontageMap<T, mf::kNoTbpWriteback>>(
      broken("no-tbp-writeback", "epoch advance does not write back the to-be-persisted buffers (Fig. 2 l.101 removed)"));
  register_adapter<MontageMap<T, mf::kAcceptUncommitted>>(
      broken("accept-uncommitted", "recovery keeps blocks whose descriptor says the operation did not commit (§3.4 rule 2)"));
  register_adapter<MontageMap<T, mf::kIgnoreAnti>>(
      broken("ignore-anti", "recovery ignores anti-nodes: erased and replaced values come back (§3.4 rule 3)"));
  register_adapter<MontageMap<T, mf::kRestoreBeforeReset>>(
      broken("restore-before-reset",
             "recovery moves the global epoch past the crashed run before its resets of the rejected blocks are "
             "durable: a crash in between, then a second recovery, revives them (§3.4; needs a crash during recovery)"));
  register_adapter<MontageMap<T, mf::kNoRecoveryReset>>(
      broken("no-recovery-reset",
             "recovery does not reset the blocks it rejects (D9): after the recovered run syncs, a second crash and "
             "recovery revive them (§3.4; needs a crash after new operations, --post-crash-every)"));
  return true;
}

}  // namespace ferrite::adapters
