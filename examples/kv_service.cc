// examples/kv_service.cc — a small durable key-value service: one process
// that reads commands on stdin, runs each on a byte-string map engine of a
// pool, and acknowledges each on stdout only after it returned (and, for a
// buffered engine, after the sync that makes it durable). Kill it at any
// moment: every acknowledged command is in the pool when it restarts.
// The test suite kills it at random 100 times per engine and checks the
// restarted service against the acknowledged state
// (tests/examples/kv_service_process_test.cc).
//
//   kv-service POOL --engine ENGINE [--pool-size BYTES] [--threads N]
//
// Engines (ferrite/map.h, one interface): mirror-hash (mirror/bytes_map.h),
// montage-hash (montage/bytes_hash_map.h), and the ordered ones that also
// scan: mirror-ordered (mirror/bytes_skip_map.h), montage-ordered
// (montage/bytes_skip_map.h); `kv-service --help` lists them.
//
// Protocol: one command per line, words separated by one space, keys and
// values in hex ("-" for the empty string: every byte string is storable).
//   put KEY VALUE   ->  inserted | replaced
//   get KEY         ->  value VALUE | absent
//   del KEY         ->  removed | absent
//   scan LO HI N    ->  up to N lines "pair KEY VALUE" for the keys in
//                       [LO, HI) in ascending byte order, then "end K"
//                       (K pairs sent); "-" as HI means no upper bound
//                       (an empty HI would make the range empty).
//                       Ordered engines only (ferrite::OrderedMap); the
//                       others answer "error: ... not ordered"
//   size            ->  size N
//   quit            ->  bye (the pool is closed cleanly)
// Keys are at most 64 KiB (the engines take up to 16 MiB; the service's
// bound gives `scan` an unbounded upper end). Anything else gets
// "error: ..." and the service goes on.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ferrite/map.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/sync/thread_registry.h"
#include "ferrite/mirror/bytes_map.h"
#include "ferrite/mirror/bytes_skip_map.h"
#include "ferrite/montage/bytes_hash_map.h"
#include "ferrite/montage/bytes_skip_map.h"

namespace {

using ferrite::pmem::Pool;

// The service's key limit (the engines take up to pmem::kMaxPayloadBytes).
constexpr std::size_t kMaxKeyBytes = std::size_t{64} << 10;

// One engine behind the commands: the map interface of ferrite/map.h, plus
// whether acknowledgements wait for a sync (buffered engines).
struct Engine {
  virtual ~Engine() = default;
  virtual bool put(const ferrite::Thread& t, std::string_view k, std::string_view v) = 0;
  virtual std::optional<std::string> get(const ferrite::Thread& t, std::string_view k) = 0;
  virtual bool remove(const ferrite::Thread& t, std::string_view k) = 0;
  virtual std::size_t size() const = 0;
  virtual void make_durable() = 0;  // before an update is acknowledged
  // Keys in [lo, hi) (no hi: to the last key) in ascending
  // order, at most `limit` pairs; false when the engine is not ordered.
  virtual bool scan(const ferrite::Thread& t, std::string_view lo, std::optional<std::string_view> hi,
                    std::size_t limit, const std::function<void(std::string_view, std::string_view)>& fn) = 0;
};

template <ferrite::Map M>
struct EngineOf final : Engine {
  std::unique_ptr<M> m;
  explicit EngineOf(std::unique_ptr<M> x) : m(std::move(x)) {}
  bool put(const ferrite::Thread& t, std::string_view k, std::string_view v) override { return m->put(t, k, v); }
  std::optional<std::string> get(const ferrite::Thread& t, std::string_view k) override { return m->get(t, k); }
  bool remove(const ferrite::Thread& t, std::string_view k) override { return m->remove(t, k); }
  std::size_t size() const override { return m->size(); }
  bool scan(const ferrite::Thread& t, std::string_view lo, std::optional<std::string_view> hi, std::size_t limit,
            const std::function<void(std::string_view, std::string_view)>& fn) override {
    if constexpr (ferrite::OrderedMap<M>) {
      std::size_t sent = 0;
      auto visit = [&](std::string_view k, std::string_view v) {
        if (sent == limit) return false;  // the callback stops the scan
        fn(k, v);
        ++sent;
        return true;
      };
      if (hi) m->scan(t, lo, *hi, visit);
      else m->scan_from(t, lo, visit);
      return true;
    } else {
      (void)t, (void)lo, (void)hi, (void)limit, (void)fn;
      return false;
    }
  }
  void make_durable() override {
    // A buffered engine (nbMontage) persists in epochs: an acknowledgement
    // must wait for the sync that makes the update durable.
    if constexpr (requires { m->sync(); }) m->sync();
  }
};

template <ferrite::Map M>
std::unique_ptr<Engine> open_engine(Pool& pool, int threads) {
  ferrite::MapOptions o;
  o.threads = threads;
  return std::make_unique<EngineOf<M>>(pool.open_or_create<M>("kv", o));
}

struct EngineInfo {
  const char* name;
  const char* what;
  std::function<std::unique_ptr<Engine>(Pool&, int)> open;
};
const EngineInfo kEngines[] = {
    {"mirror-hash", "Mirror's hash map (durably linearizable: durable when a command returns)",
     open_engine<ferrite::mirror::BytesHashMap<>>},
    {"montage-hash", "nbMontage's resizable hash map (buffered: each update is synced before its acknowledgement)",
     open_engine<ferrite::montage::BytesHashMap<>>},
    {"mirror-ordered", "Mirror's skip list, ordered: scan (durably linearizable)",
     open_engine<ferrite::mirror::BytesSkipMap<>>},
    {"montage-ordered", "nbMontage's skip list, ordered: scan (buffered: each update is synced before its acknowledgement)",
     open_engine<ferrite::montage::BytesSkipMap<>>},
};

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
bool unhex(std::string_view h, std::string* out) {
  out->clear();
  if (h == "-") return true;
  if (h.empty() || h.size() % 2 != 0) return false;
  for (std::size_t i = 0; i < h.size(); i += 2) {
    const int a = hexval(h[i]), b = hexval(h[i + 1]);
    if (a < 0 || b < 0) return false;
    out->push_back(static_cast<char>(a * 16 + b));
  }
  return true;
}
std::string hex(std::string_view s) {
  if (s.empty()) return "-";
  static const char* d = "0123456789abcdef";
  std::string h;
  h.reserve(2 * s.size());
  for (unsigned char c : s) {
    h.push_back(d[c >> 4]);
    h.push_back(d[c & 15]);
  }
  return h;
}

int usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "kv-service: %s\n", why);
  std::fprintf(stderr, "usage: kv-service POOL --engine ENGINE [--pool-size BYTES] [--threads N]\nengines:\n");
  for (const auto& e : kEngines) std::fprintf(stderr, "  %-14s %s\n", e.name, e.what);
  return why == nullptr ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, engine;
  std::size_t pool_size = std::size_t{64} << 20;
  int threads = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--help" || a == "-h") return usage(nullptr);
    if (a == "--engine") {
      const char* v = next();
      if (v == nullptr) return usage("--engine needs a name");
      engine = v;
    } else if (a == "--pool-size" || a == "--threads") {
      const char* v = next();
      char* end = nullptr;
      const unsigned long long n = v == nullptr ? 0 : std::strtoull(v, &end, 10);
      if (v == nullptr || *end != '\0' || n == 0) return usage((a + " needs a positive number").c_str());
      if (a == "--pool-size") pool_size = n;
      else threads = static_cast<int>(n);
    } else if (!a.empty() && a[0] == '-') {
      return usage(("unknown option " + a).c_str());
    } else if (path.empty()) {
      path = a;
    } else {
      return usage("one pool only");
    }
  }
  if (path.empty()) return usage("give the pool file");
  const EngineInfo* info = nullptr;
  for (const auto& e : kEngines)
    if (engine == e.name) info = &e;
  if (info == nullptr) return usage(engine.empty() ? "give --engine" : ("unknown engine '" + engine + "'").c_str());

  std::unique_ptr<Pool> pool;
  std::unique_ptr<Engine> map;
  try {
    pool = Pool::open_or_create(path, pool_size);
    map = info->open(*pool, threads);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kv-service: %s\n", e.what());
    return 1;
  }
  ferrite::sync::ThreadRegistry registry(threads);
  const ferrite::Thread me = registry.acquire();
  std::string line, k, v;
  while (std::getline(std::cin, line)) {
    const auto sp1 = line.find(' ');
    const std::string cmd = line.substr(0, sp1);
    const std::string rest = sp1 == std::string::npos ? "" : line.substr(sp1 + 1);
    std::string reply;
    try {
      if (cmd == "put") {
        const auto sp = rest.find(' ');
        if (sp == std::string::npos || !unhex(rest.substr(0, sp), &k) || !unhex(rest.substr(sp + 1), &v)) {
          reply = "error: put KEY VALUE, both hex";
        } else if (k.size() > kMaxKeyBytes) {
          reply = "error: key of " + std::to_string(k.size()) + " bytes: the service takes keys of at most " +
                  std::to_string(kMaxKeyBytes) + " bytes";
        } else {
          const bool inserted = map->put(me, k, v);
          map->make_durable();
          reply = inserted ? "inserted" : "replaced";
        }
      } else if (cmd == "get") {
        if (!unhex(rest, &k)) {
          reply = "error: get KEY, hex";
        } else {
          auto r = map->get(me, k);
          reply = r ? "value " + hex(*r) : "absent";
        }
      } else if (cmd == "del") {
        if (!unhex(rest, &k)) {
          reply = "error: del KEY, hex";
        } else {
          const bool removed = map->remove(me, k);
          map->make_durable();
          reply = removed ? "removed" : "absent";
        }
      } else if (cmd == "scan") {
        const auto sp = rest.find(' ');
        const auto sp2 = sp == std::string::npos ? std::string::npos : rest.find(' ', sp + 1);
        std::string lo, hi;
        char* end = nullptr;
        const std::string ns = sp2 == std::string::npos ? "" : rest.substr(sp2 + 1);
        const unsigned long long n = ns.empty() ? 0 : std::strtoull(ns.c_str(), &end, 10);
        const bool unbounded = sp2 != std::string::npos && rest.substr(sp + 1, sp2 - sp - 1) == "-";
        if (sp2 == std::string::npos || !unhex(rest.substr(0, sp), &lo) ||
            (!unbounded && !unhex(rest.substr(sp + 1, sp2 - sp - 1), &hi)) || ns.empty() || *end != '\0') {
          reply = "error: scan LO HI N (LO, HI hex, HI '-' for no bound, N a count)";
        } else {
          std::string out;
          std::size_t sent = 0;
          const bool ordered = map->scan(me, lo, unbounded ? std::nullopt : std::optional<std::string_view>(hi), n,
                                         [&](std::string_view key, std::string_view val) {
                                           out += "pair " + hex(key) + " " + hex(val) + "\n";
                                           ++sent;
                                         });
          if (!ordered) {
            reply = "error: engine '" + engine + "' is not ordered (scan needs an ordered engine)";
          } else {
            std::cout << out;
            reply = "end " + std::to_string(sent);
          }
        }
      } else if (cmd == "size") {
        reply = "size " + std::to_string(map->size());
      } else if (cmd == "quit") {
        std::cout << "bye" << std::endl;
        break;
      } else {
        reply = "error: unknown command '" + cmd + "' (put, get, del, scan, size, quit)";
      }
    } catch (const std::exception& e) {
      reply = std::string("error: ") + e.what();  // a limit (size, full pool): nothing changed
    }
    // The acknowledgement: written only after the command returned (and was
    // made durable), flushed at once.
    std::cout << reply << std::endl;
  }
  return 0;
}
