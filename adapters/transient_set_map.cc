// adapters/transient_set_map.cc — transient (volatile, non-durable) sets and
// maps for `ferrite bench`'s key-mix workload (get:insert:remove, the
// nbMontage and Mirror papers' experiments): what the durable sets and maps
// (nbMontage, Mirror) pay for persistence, measured in the same run.
//
//   mutex-std        set: std::set<int64>, map: std::unordered_map<int64,
//                    payload>, each behind one std::mutex
//   libcds-michael   libcds 2.3 MichaelHashSet / MichaelHashMap over
//                    Michael's lock-free lists, Hazard Pointer GC (external
//                    code; the hash table nbMontage's Fig. 4 makes durable),
//                    one bucket per key of the key range (2^20 if unknown)
//   libcds-splitlist map: libcds 2.3 SplitListMap, Shalev–Shavit's
//                    split-ordered table over Michael's list, Hazard Pointer
//                    GC (external code; nbMontage's "DRAM (T)-SS", the
//                    transient original of montage-splitorder), sized for
//                    the key range at load factor 1
//   tbb-hashmap      oneTBB concurrent_hash_map (external code; per-element
//                    reader-writer locks), for the set with an empty value
//
// Keys are 8 bytes; the maps also take 32-byte keys (`--key-size 32`:
// Key32::from(key), ferrite/key32.h, hashed and compared as bytes). Map values: mutex-std and tbb-hashmap store a payload
// of --value-size bytes (the operation's 8-byte value in its first bytes;
// a put builds a fresh payload, a get reads the 8 bytes back);
// libcds-michael stores 8-byte values (an atomic word updated in place, so
// a put on a present key needs no lock) and ignores --value-size.
//
// Responses follow ferrite/op.h: set insert/remove/contains -> bool; map
// put -> old value | none, get -> value | none, erase -> old value | none.
// No pool, no persistence verbs, no crash subject (crash = false).
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "adapter.h"
#include "ferrite/key32.h"
#include "libcds_runtime.h"

#ifdef FERRITE_HAVE_LIBCDS
#include <cds/container/michael_kvlist_hp.h>
#include <cds/container/michael_list_hp.h>
#include <cds/container/michael_map.h>
// After the ordered list's header (libcds's inclusion order).
#include <cds/container/split_list_map.h>
#include <cds/container/michael_set.h>
#endif

#ifdef FERRITE_HAVE_TBB
#include <tbb/concurrent_hash_map.h>
#endif

namespace adapter_transient_set_map {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace op = ferrite::op;
using fa::Origin;
using Key = std::int64_t;

// A map value of `size` bytes (>= 8) carrying v in its first 8.
std::string make_payload(std::int64_t v, std::size_t size) {
  std::string p(size < sizeof v ? sizeof v : size, '\0');
  std::memcpy(p.data(), &v, sizeof v);
  return p;
}
std::int64_t payload_value(const std::string& p) {
  std::int64_t v = 0;
  std::memcpy(&v, p.data(), sizeof v);
  return v;
}

// The traits common to every technique here: a transient container behind
// a unique_ptr; Ops implements the abstract structure's three operations.
template <class T, op::Abstract A, class Ops>
struct Keyed : fa::TransientTraits<T, A, Ops> {
  using Handle = std::unique_ptr<T>;
  static op::Response apply(Handle& h, int, std::uint64_t, const op::Op& o) {
    if constexpr (A == op::Abstract::kSet) {
      switch (o.kind) {
        case op::kInsert: return op::Response::boolean(Ops::insert(*h, o.arg));
        case op::kRemove: return op::Response::boolean(Ops::remove(*h, o.arg));
        case op::kContains: return op::Response::boolean(Ops::contains(*h, o.arg));
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("transient set", o);
      }
    } else {
      static_assert(A == op::Abstract::kMap);
      std::int64_t v = 0;
      switch (o.kind) {
        case op::kPut: return Ops::put(*h, o.arg, o.arg2, &v) ? op::Response::of(v) : op::Response::none();
        case op::kGet: return Ops::get(*h, o.arg, &v) ? op::Response::of(v) : op::Response::none();
        case op::kErase: return Ops::erase(*h, o.arg, &v) ? op::Response::of(v) : op::Response::none();
        case op::kSync: return op::Response::ack();
        default: fa::unsupported("transient map", o);
      }
    }
  }
};

fa::Registration transient(const char* name, const char* family, const char* description) {
  return fa::Registration{.technique = name,
                          .family = family,
                          .origin = Origin::kTransient,
                          .description = description,
                          .crash = false,
                          .needs_pool = false,
                          .pool_size = 0};
}
fa::Registration transient_wide(const char* name, const char* family, const char* description) {
  fa::Registration r = transient(name, family, description);
  r.wide_keys = true;
  return r;
}

// A map over 8-byte keys, or (Setup::key_size 32) the same map over
// Key32::from(key): Obj<K> is the container, Ops<K> its operations.
template <template <class> class Obj, template <class> class Ops>
struct WideKeyedMap {
  struct Handle {
    std::unique_ptr<Obj<Key>> narrow;
    std::unique_ptr<Obj<ferrite::Key32>> wide;
  };
  static constexpr op::Abstract kAbstract = op::Abstract::kMap;
  static constexpr bool kDetectable = false;
  static Handle create(ferrite::pmem::Pool*, const fa::Setup& s) {
    Handle h;
    if (s.key_size == 32) h.wide = Ops<ferrite::Key32>::make(s);
    else h.narrow = Ops<Key>::make(s);
    return h;
  }
  static Handle attach(ferrite::pmem::Pool&, const fa::Setup&) {
    throw std::logic_error("a transient technique has nothing to attach to");
  }
  template <class K, class M>
  static op::Response run(M& m, const op::Op& o, const K& k) {
    std::int64_t v = 0;
    switch (o.kind) {
      case op::kPut: return Ops<K>::put(m, k, o.arg2, &v) ? op::Response::of(v) : op::Response::none();
      case op::kGet: return Ops<K>::get(m, k, &v) ? op::Response::of(v) : op::Response::none();
      case op::kErase: return Ops<K>::erase(m, k, &v) ? op::Response::of(v) : op::Response::none();
      case op::kSync: return op::Response::ack();
      default: fa::unsupported("transient map", o);
    }
  }
  static op::Response apply(Handle& h, int, std::uint64_t, const op::Op& o) {
    if (h.wide) return run(*h.wide, o, ferrite::Key32::from(o.arg));
    return run(*h.narrow, o, o.arg);
  }
};

// Hashes for the maps' keys: 8-byte keys mixed (splitmix64's finalizer,
// a bijection), 32-byte keys over all their bytes.
template <class K>
struct AnyKeyHash {
  std::size_t operator()(const K& k) const {
    if constexpr (std::is_same_v<K, ferrite::Key32>) {
      return static_cast<std::size_t>(k.hash());
    } else {
      auto x = static_cast<std::uint64_t>(k);
      x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
      x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
      return static_cast<std::size_t>(x ^ (x >> 31));
    }
  }
};

// ------------------------------------------------------------ mutex-std

struct LockedSet {
  std::mutex m;
  std::set<Key> s;
};
struct LockedSetOps {
  static auto make(const fa::Setup&) { return std::make_unique<LockedSet>(); }
  static bool insert(LockedSet& h, Key k) {
    std::lock_guard g(h.m);
    return h.s.insert(k).second;
  }
  static bool remove(LockedSet& h, Key k) {
    std::lock_guard g(h.m);
    return h.s.erase(k) != 0;
  }
  static bool contains(LockedSet& h, Key k) {
    std::lock_guard g(h.m);
    return h.s.count(k) != 0;
  }
};

template <class K>
struct LockedMap {
  explicit LockedMap(std::size_t value_size) : value_size(value_size) {}
  std::size_t value_size;
  std::mutex m;
  // 8-byte keys: std::hash (as before 32-byte keys existed).
  std::unordered_map<K, std::string, std::conditional_t<std::is_same_v<K, Key>, std::hash<Key>, AnyKeyHash<K>>> map;
};
template <class K>
struct LockedMapOps {
  static auto make(const fa::Setup& s) { return std::make_unique<LockedMap<K>>(s.value_size); }
  static bool put(LockedMap<K>& h, const K& k, std::int64_t v, std::int64_t* old) {
    std::string p = make_payload(v, h.value_size);  // built outside the lock
    std::lock_guard g(h.m);
    auto [it, added] = h.map.try_emplace(k, std::move(p));
    if (added) return false;
    *old = payload_value(it->second);
    it->second = std::move(p);  // try_emplace left p intact when the key was present
    return true;
  }
  static bool get(LockedMap<K>& h, const K& k, std::int64_t* v) {
    std::lock_guard g(h.m);
    const auto it = h.map.find(k);
    if (it == h.map.end()) return false;
    *v = payload_value(it->second);
    return true;
  }
  static bool erase(LockedMap<K>& h, const K& k, std::int64_t* old) {
    std::lock_guard g(h.m);
    const auto it = h.map.find(k);
    if (it == h.map.end()) return false;
    *old = payload_value(it->second);
    h.map.erase(it);
    return true;
  }
};

using MutexSet = Keyed<LockedSet, op::Abstract::kSet, LockedSetOps>;
using MutexMap = WideKeyedMap<LockedMap, LockedMapOps>;
FERRITE_REGISTER_ADAPTER(MutexSet, transient("mutex-std", "transient", "std::set behind a std::mutex (transient)"));
FERRITE_REGISTER_ADAPTER(MutexMap, transient_wide("mutex-std", "transient",
                                             "std::unordered_map behind a std::mutex (transient)"));

// ------------------------------------------------------------ libcds

#ifdef FERRITE_HAVE_LIBCDS

// A bijective 64-bit mix (splitmix64's finalizer): keys spread over the buckets.
struct KeyHash {
  std::size_t operator()(Key k) const {
    auto x = static_cast<std::uint64_t>(k);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return static_cast<std::size_t>(x ^ (x >> 31));
  }
};
// One bucket per key of the run's key range (load factor 1), 2^20 when the
// range is unknown (nbMontage's 1 M keys).
inline std::size_t cds_buckets(const fa::Setup& s) {
  return s.key_range > 0 ? static_cast<std::size_t>(s.key_range) : std::size_t{1} << 20;
}

struct CdsListTraits : cds::container::michael_list::traits {
  typedef std::less<Key> less;
};
struct CdsHashTraits : cds::container::michael_map::traits {
  typedef KeyHash hash;
};
struct CdsSetTraits : cds::container::michael_set::traits {
  typedef KeyHash hash;
};
using CdsSetList = cds::container::MichaelList<cds::gc::HP, Key, CdsListTraits>;
using CdsSet = cds::container::MichaelHashSet<cds::gc::HP, CdsSetList, CdsSetTraits>;

// The map's value: a word updated in place (copyable for libcds's node
// construction; atomic, so a put on a present key races with nobody).
struct Cell {
  std::atomic<std::int64_t> v{0};
  Cell() = default;
  Cell(std::int64_t x) : v(x) {}  // NOLINT: libcds constructs values from the inserted int64
  Cell(const Cell& o) : v(o.v.load(std::memory_order_relaxed)) {}
};
template <class K>
struct CdsListTraitsOf : cds::container::michael_list::traits {
  typedef std::less<K> less;
};
template <class K>
struct CdsHashTraitsOf : cds::container::michael_map::traits {
  typedef AnyKeyHash<K> hash;
};
template <class K>
using CdsMapOf = cds::container::MichaelHashMap<
    cds::gc::HP, cds::container::MichaelKVList<cds::gc::HP, K, Cell, CdsListTraitsOf<K>>, CdsHashTraitsOf<K>>;
using CdsMap = CdsMapOf<Key>;

struct CdsSetOps {
  static auto make(const fa::Setup& s) {
    fa::libcds_runtime();
    return std::make_unique<CdsSet>(cds_buckets(s), 1);
  }
  static bool insert(CdsSet& h, Key k) { return h.insert(k); }
  static bool remove(CdsSet& h, Key k) { return h.erase(k); }
  static bool contains(CdsSet& h, Key k) { return h.contains(k); }
};
template <class K>
struct CdsMapOps {
  using M = CdsMapOf<K>;
  static auto make(const fa::Setup& s) {
    fa::libcds_runtime();
    return std::make_unique<M>(cds_buckets(s), 1);
  }
  static bool put(M& h, const K& k, std::int64_t v, std::int64_t* old) {
    // Insert a new node, or swap the value of the present one; a remove in
    // between makes both fail: try again.
    for (;;) {
      if (h.insert(k, v)) return false;
      if (h.find(k, [&](typename M::value_type& item) { *old = item.second.v.exchange(v); })) return true;
    }
  }
  static bool get(M& h, const K& k, std::int64_t* v) {
    return h.find(k, [&](typename M::value_type& item) { *v = item.second.v.load(); });
  }
  static bool erase(M& h, const K& k, std::int64_t* old) {
    return h.erase(k, [&](typename M::value_type& item) { *old = item.second.v.load(); });
  }
};

// Shalev–Shavit over Michael's list (the same Cell values as CdsMap).
struct CdsSplitTraits : cds::container::split_list::traits {
  typedef cds::container::michael_list_tag ordered_list;
  typedef KeyHash hash;
  struct ordered_list_traits : cds::container::michael_list::traits {
    typedef std::less<Key> less;
  };
};
using CdsSplitMap = cds::container::SplitListMap<cds::gc::HP, Key, Cell, CdsSplitTraits>;
struct CdsSplitMapOps {
  static auto make(const fa::Setup& s) {
    fa::libcds_runtime();
    return std::make_unique<CdsSplitMap>(cds_buckets(s), 1);
  }
  static bool put(CdsSplitMap& h, Key k, std::int64_t v, std::int64_t* old) {
    for (;;) {  // as CdsMapOps::put
      if (h.insert(k, v)) return false;
      if (h.find(k, [&](CdsSplitMap::value_type& item) { *old = item.second.v.exchange(v); })) return true;
    }
  }
  static bool get(CdsSplitMap& h, Key k, std::int64_t* v) {
    return h.find(k, [&](CdsSplitMap::value_type& item) { *v = item.second.v.load(); });
  }
  static bool erase(CdsSplitMap& h, Key k, std::int64_t* old) {
    return h.erase(k, [&](CdsSplitMap::value_type& item) { *old = item.second.v.load(); });
  }
};

struct CdsSetAdapter : Keyed<CdsSet, op::Abstract::kSet, CdsSetOps>, fa::LibcdsThreads {};
struct CdsMapAdapter : WideKeyedMap<CdsMapOf, CdsMapOps>, fa::LibcdsThreads {};
FERRITE_REGISTER_ADAPTER(CdsSetAdapter,
                         transient("libcds-michael", "libcds",
                                   "libcds MichaelHashSet (lock-free lists, Hazard Pointers; external, transient)"));
FERRITE_REGISTER_ADAPTER(CdsMapAdapter,
                         transient_wide("libcds-michael", "libcds",
                                   "libcds MichaelHashMap (lock-free lists, Hazard Pointers; external, transient)"));
struct CdsSplitMapAdapter : Keyed<CdsSplitMap, op::Abstract::kMap, CdsSplitMapOps>, fa::LibcdsThreads {};
FERRITE_REGISTER_ADAPTER(CdsSplitMapAdapter,
                         transient("libcds-splitlist", "libcds",
                                   "libcds SplitListMap (Shalev-Shavit split-ordered table, Hazard Pointers; "
                                   "external, transient)"));

#endif  // FERRITE_HAVE_LIBCDS

// ------------------------------------------------------------ oneTBB

#ifdef FERRITE_HAVE_TBB

struct Empty {};
using TbbSet = tbb::concurrent_hash_map<Key, Empty>;
// 32-byte keys: tbb's hash_compare over all the key's bytes.
template <class K>
struct TbbKeyCompare {
  static std::size_t hash(const K& k) { return AnyKeyHash<K>()(k); }
  static bool equal(const K& a, const K& b) { return a == b; }
};
template <class K>
using TbbMapOf = tbb::concurrent_hash_map<
    K, std::string, std::conditional_t<std::is_same_v<K, Key>, tbb::tbb_hash_compare<Key>, TbbKeyCompare<K>>>;
template <class K>
struct TbbMap {
  explicit TbbMap(std::size_t value_size) : value_size(value_size) {}
  std::size_t value_size;
  TbbMapOf<K> map;
};

struct TbbSetOps {
  static auto make(const fa::Setup&) { return std::make_unique<TbbSet>(); }
  static bool insert(TbbSet& h, Key k) { return h.insert(TbbSet::value_type(k, Empty{})); }
  static bool remove(TbbSet& h, Key k) { return h.erase(k); }
  static bool contains(TbbSet& h, Key k) { return h.count(k) != 0; }
};
template <class K>
struct TbbMapOps {
  using Map = TbbMapOf<K>;
  static auto make(const fa::Setup& s) { return std::make_unique<TbbMap<K>>(s.value_size); }
  static bool put(TbbMap<K>& h, const K& k, std::int64_t v, std::int64_t* old) {
    std::string p = make_payload(v, h.value_size);
    typename Map::accessor a;  // the element's write lock
    const bool added = h.map.insert(a, k);
    if (!added) *old = payload_value(a->second);
    a->second = std::move(p);
    return !added;
  }
  static bool get(TbbMap<K>& h, const K& k, std::int64_t* v) {
    typename Map::const_accessor a;  // the element's read lock
    if (!h.map.find(a, k)) return false;
    *v = payload_value(a->second);
    return true;
  }
  static bool erase(TbbMap<K>& h, const K& k, std::int64_t* old) {
    typename Map::accessor a;
    if (!h.map.find(a, k)) return false;
    *old = payload_value(a->second);
    return h.map.erase(a);
  }
};

using TbbSetAdapter = Keyed<TbbSet, op::Abstract::kSet, TbbSetOps>;
using TbbMapAdapter = WideKeyedMap<TbbMap, TbbMapOps>;
FERRITE_REGISTER_ADAPTER(TbbSetAdapter,
                         transient("tbb-hashmap", "tbb",
                                   "oneTBB concurrent_hash_map as a set (per-element locks; external, transient)"));
FERRITE_REGISTER_ADAPTER(TbbMapAdapter,
                         transient_wide("tbb-hashmap", "tbb",
                                   "oneTBB concurrent_hash_map (per-element locks; external, transient)"));

#endif  // FERRITE_HAVE_TBB

}  // namespace

}  // namespace adapter_transient_set_map
