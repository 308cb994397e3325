// ferrite/map.h — the one map interface every byte-string map engine
// implements (as pmemkv gives one interface over many engines).
//
// Keys and values are byte strings: std::string_view in, any size from 0
// bytes to pmem::kMaxPayloadBytes (no reserved values: every byte string,
// the empty one included, is storable). Out: a std::string copy
// (`get`), or a callback over the bytes in place (`get(t, key, fn)`,
// `scan`), valid only during the call. Every call takes the calling
// thread's handle first (ferrite::Thread, sync/thread_registry.h), then the
// key, then the value.
//
//   bool put(const Thread&, std::string_view key, std::string_view value);
//       // true: inserted; false: an existing value was replaced
//   std::optional<std::string> get(const Thread&, std::string_view key);
//   bool get(const Thread&, std::string_view key, F&& fn);  // fn(std::string_view value); false: absent
//   bool remove(const Thread&, std::string_view key);       // false: absent
//   bool contains(const Thread&, std::string_view key);
//   std::size_t size() const;  // exact when no update runs concurrently
//
// Ordered engines (OrderedMap) add
//
//   void scan(const Thread&, std::string_view lo, std::string_view hi, F&& fn);
//       // every key in [lo, hi) in ascending byte order (std::string_view
//       // comparison); fn(key, value) returns false to stop
//   void scan_from(const Thread&, std::string_view lo, F&& fn);
//       // every key >= lo, the same way (iteration: scan_from(t, "", fn))
//
// Creation and re-attachment go through the pool, with one options struct:
//
//   auto m = pool->open_or_create<Engine>("name", MapOptions{...});
//
// Guarantees, per engine (docs/guide.md "Which structure"): Mirror engines
// are durably linearizable (an operation that returned survives any crash);
// nbMontage engines are buffered durably linearizable (a crash loses at most
// the operations of the last two epochs; sync() makes everything before it
// durable; a clean close or destruction syncs).
//
// Thread safety: every operation is safe concurrently from distinct thread
// handles of the engine's capacity (MapOptions::threads).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ferrite/sync/thread_registry.h"

namespace ferrite {

// Creation options shared by the map engines (an engine ignores what does
// not apply to it and says so in its header).
struct MapOptions {
  int threads = 64;               // capacity: thread ids in [0, threads)
  std::size_t buckets = 1024;     // hash engines: the initial table (it grows)
};

template <class M>
concept Map = requires(M& m, const M& cm, const Thread& t, std::string_view k, std::string_view v) {
  { m.put(t, k, v) } -> std::same_as<bool>;
  { m.get(t, k) } -> std::same_as<std::optional<std::string>>;
  { m.get(t, k, [](std::string_view) {}) } -> std::same_as<bool>;
  { m.remove(t, k) } -> std::same_as<bool>;
  { m.contains(t, k) } -> std::same_as<bool>;
  { cm.size() } -> std::convertible_to<std::size_t>;
};

template <class M>
concept OrderedMap = Map<M> && requires(M& m, const Thread& t, std::string_view k) {
  m.scan(t, k, k, [](std::string_view, std::string_view) { return true; });
  m.scan_from(t, k, [](std::string_view, std::string_view) { return true; });
};

}  // namespace ferrite
