// examples/mirror_kv.cc — a durable key-value map made persistent by Mirror
// (include/ferrite/mirror/hash_map.h), killed and restarted by the tour
// (`ferrite demo`, step 1, second part).
//
//   mirror-kv init POOL                    create the pool and an empty map
//   mirror-kv run POOL --from N [--ack-fd FD] [--ops M]
//                                          open (the pool recovers itself),
//                                          attach (Mirror's recovery rebuilds
//                                          the volatile replica by tracing),
//                                          then apply operations N, N+1, ...
//                                          of a fixed stream (M of them, or
//                                          until killed), writing one byte to
//                                          FD after each one returns
//   mirror-kv verify POOL --acked N [--json]
//                                          the map must be the state after
//                                          the first N operations, or after
//                                          N + 1 (the one in flight at the
//                                          kill may have taken effect);
//                                          exit 0 if so, 1 if not
//
// The stream: operation i is erase(key) when i % 5 == 4, else put(key, i),
// with key = (i * 7) % 997. So the expected map after any prefix is a pure
// function of its length, and the checker needs nothing but N.
//
// What a kill shows: the DRAM replica, the allocator's free lists and EBR's
// retired nodes die with the process; the restarted process gets them back
// from the persistent replica alone (Mirror, PLDI 2021, §4.3.3). What a kill
// does not show: lost cache lines at a power failure — on /dev/shm every
// store of a killed process survives in the page cache. The crash simulator
// covers that (tests/mirror/mirror_crash_test.cc).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ferrite/mirror/hash_map.h"
#include "ferrite/pmem/pool.h"

namespace {

namespace fm = ferrite::mirror;
using ferrite::pmem::Pool;
using Map = fm::HashMap<>;  // the paper's main mode: the volatile replica in DRAM

constexpr const char* kName = "kv";
constexpr std::size_t kPoolBytes = std::size_t{64} << 20;
constexpr std::size_t kReplicaBytes = std::size_t{16} << 20;
constexpr std::uint64_t kBuckets = 1024;
constexpr std::uint64_t kKeys = 997;

std::int64_t key_of(std::uint64_t i) { return static_cast<std::int64_t>((i * 7) % kKeys); }
bool is_erase(std::uint64_t i) { return i % 5 == 4; }

// The map after the first n operations of the stream.
std::vector<std::pair<std::int64_t, std::int64_t>> expected(std::uint64_t n) {
  std::map<std::int64_t, std::int64_t> m;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (is_erase(i)) m.erase(key_of(i));
    else m[key_of(i)] = static_cast<std::int64_t>(i);
  }
  return {m.begin(), m.end()};
}

int usage() {
  std::fprintf(stderr,
               "usage: mirror-kv init POOL\n"
               "       mirror-kv run POOL --from N [--ack-fd FD] [--ops M]\n"
               "       mirror-kv verify POOL --acked N [--json]\n"
               "A durable key-value map on Mirror (patomic<T>, two replicas) that survives kills.\n");
  return 2;
}

bool parse_u64(const char* s, std::uint64_t* out) {
  if (s == nullptr || *s == '\0' || *s == '-') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

int cmd_init(const std::string& path) {
  auto pool = Pool::create(path, kPoolBytes);
  Map::create(*pool, kName, 1, kBuckets, kReplicaBytes);
  std::printf("mirror-kv: created %s (a Mirror hash map, %llu buckets)\n", path.c_str(),
              static_cast<unsigned long long>(kBuckets));
  return 0;
}

int cmd_run(const std::string& path, std::uint64_t from, int ack_fd, std::optional<std::uint64_t> ops) {
  auto pool = Pool::open(path);
  auto map = Map::attach(*pool, kName, 1);
  for (std::uint64_t i = from; !ops || i < from + *ops; ++i) {
    if (is_erase(i)) map->erase(key_of(i), 0);
    else map->put(key_of(i), static_cast<std::int64_t>(i), 0);
    // The operation has returned: acknowledge it (the tour counts these).
    const char b = 1;
    if (ack_fd >= 0 && ::write(ack_fd, &b, 1) != 1) return 3;
  }
  return 0;
}

int cmd_verify(const std::string& path, std::uint64_t acked, bool json) {
  auto pool = Pool::open(path);
  auto map = Map::attach(*pool, kName, 1);
  const auto got = map->items(true);
  const bool replicas = map->replicas_equal();
  const char* state = got == expected(acked) ? "acked" : got == expected(acked + 1) ? "acked+1" : "neither";
  const bool ok = replicas && std::strcmp(state, "neither") != 0;
  const std::uint64_t survived = acked + (std::strcmp(state, "acked+1") == 0 ? 1 : 0);
  if (json)
    std::printf("{\"acked\": %llu, \"state\": \"%s\", \"survived\": %llu, \"keys\": %zu, \"replicas_equal\": %s, "
                "\"ok\": %s}\n",
                static_cast<unsigned long long>(acked), state, static_cast<unsigned long long>(survived), got.size(),
                replicas ? "true" : "false", ok ? "true" : "false");
  else
    std::printf("mirror-kv: %zu keys; the map is %s; replicas %s: %s\n", got.size(),
                std::strcmp(state, "neither") == 0 ? "NEITHER the state after the acknowledged operations nor one more"
                : std::strcmp(state, "acked") == 0 ? "the state after the acknowledged operations"
                                                   : "the state after the acknowledged operations and the one in flight",
                replicas ? "equal" : "DIFFER", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    usage();
    return 0;
  }
  if (argc < 3) {
    std::fprintf(stderr, "mirror-kv: a command and a pool file are needed\n");
    return usage();
  }
  const std::string cmd = argv[1], path = argv[2];
  std::uint64_t from = 0, acked = 0, ops = 0, fd = 0;
  bool have_from = false, have_acked = false, have_ops = false, json = false;
  int ack_fd = -1;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--json") {
      json = true;
      continue;
    }
    std::uint64_t* dst = a == "--from" ? &from : a == "--acked" ? &acked : a == "--ops" ? &ops : a == "--ack-fd" ? &fd : nullptr;
    if (dst == nullptr) {
      std::fprintf(stderr, "mirror-kv: unknown option '%s'\n", a.c_str());
      return usage();
    }
    if (!parse_u64(v, dst)) {
      std::fprintf(stderr, "mirror-kv: %s takes a non-negative number\n", a.c_str());
      return usage();
    }
    have_from |= a == "--from";
    have_acked |= a == "--acked";
    have_ops |= a == "--ops";
    if (a == "--ack-fd") ack_fd = static_cast<int>(fd);
    ++i;
  }
  try {
    if (cmd == "init") return cmd_init(path);
    if (cmd == "run") {
      if (!have_from) {
        std::fprintf(stderr, "mirror-kv: run needs --from N\n");
        return usage();
      }
      return cmd_run(path, from, ack_fd, have_ops ? std::optional<std::uint64_t>(ops) : std::nullopt);
    }
    if (cmd == "verify") {
      if (!have_acked) {
        std::fprintf(stderr, "mirror-kv: verify needs --acked N\n");
        return usage();
      }
      return cmd_verify(path, acked, json);
    }
    std::fprintf(stderr, "mirror-kv: unknown command '%s'\n", cmd.c_str());
    return usage();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mirror-kv: %s: %s\n", path.c_str(), e.what());
    return 1;
  }
}
