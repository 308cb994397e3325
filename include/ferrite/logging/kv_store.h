// ferrite/logging/kv_store.h — the StrandWeaver paper's N-Store workloads
// (Table II: 90/10, 50/50, 10/90 read/write key-value workloads driven by
// YCSB) as a persistent structure on the failure-atomic logging library
// (logging/undo_log.h).
//
// What it is. An N-Store-like table (Joy Arulraj, Andrew Pavlo, Subramanya
// R. Dulloor, "Let's Talk About Storage & Recovery Methods for Non-Volatile
// Memory Database Systems", SIGMOD 2015: its in-place-update engine with an
// undo log — the engine the StrandWeaver paper modified, §VI): tuples of
// kFields 8-byte fields (YCSB's record, scaled down) indexed by a chained
// hash table, buckets striped over 16 locks. A YCSB read returns the
// tuple's first field; a YCSB update rewrites every field of the tuple in
// one failure-atomic region (kFields logged stores: a torn update is
// visible as fields that disagree); an insert links a new tuple; an erase
// unlinks one. The read/write mixes are the benchmark's get:put ratios
// (`ferrite bench --mix 90:10:0`, `50:50:0`, `10:90:0` over a prefilled
// key range) and the crash workload's default map mix. Paper: Vaibhav
// Gogte et al., "Relaxed Persist Ordering Using Strand Persistency", ISCA
// 2020, Table II.
//
// The table is LoggedHashTable (workloads.h, shared with LoggedMap) with a
// tuple payload (KvPayload).
//
// Thread safety: every member may be called concurrently with distinct tids.
// Invariants (between regions): field f of a tuple holding value v is
// kv_field_value(v, f); keys are unique.
// Persistence: put and erase are failure-atomic and durable when they
// return (undo_log.h P1-P3); a new tuple is initialised with unlogged
// stores (Logger::init), an unlinked one retired.
// Recovery: the root hook runs logging::recover_area, then traces the
// rolled-back table.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrite/logging/workloads.h"

namespace ferrite::logging {

// A YCSB tuple: kKvFields 8-byte fields; field f of a tuple holding value
// v is kv_field_value(v, f).
inline constexpr int kKvFields = 4;
constexpr std::int64_t kv_field_value(std::int64_t v, int f) {
  return f == 0 ? v : static_cast<std::int64_t>(static_cast<std::uint64_t>(v) * 0x9E3779B97F4A7C15ull + f);
}

struct KvPayload {
  struct Payload {
    std::int64_t fields[kKvFields];
  };
  static constexpr std::uint32_t kTypeTag = 0x4C47'4B56;  // "LGKV"
  static constexpr const char* kTypeName = "logging::LoggedKvStore";
  static std::int64_t value(const Payload& p) { return p.fields[0]; }
  static bool whole(const Payload& p) {
    for (int f = 1; f < kKvFields; ++f)
      if (p.fields[f] != kv_field_value(p.fields[0], f)) return false;
    return true;
  }
  // A YCSB update rewrites every field: kKvFields logged stores.
  static void store(Logger& lg, int tid, Payload& p, std::int64_t v, bool fresh) {
    for (int f = 0; f < kKvFields; ++f) {
      // CRASH: a crash between two fields leaves a torn tuple; the undo
      // entries of the stored ones are durable first (P1), so recovery
      // restores the old tuple whole.
      if (fresh) lg.init(tid, &p.fields[f], kv_field_value(v, f));
      else lg.write(tid, &p.fields[f], kv_field_value(v, f));
    }
  }
};

using LoggedKvStore = LoggedHashTable<KvPayload>;
static_assert(sizeof(LoggedKvStore::Node) == 8 * (kKvFields + 2));

inline const bool kLoggedKvStoreRootRegistered =
    pmem::register_root_type<LoggedKvStore::Root>(&LoggedKvStore::recover_root);

}  // namespace ferrite::logging
