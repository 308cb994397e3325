// `ferrite fuzz-pool` — fuzz a pool file to the byte (issue 40, "Fuzzed to
// the byte"; docs/pool-format.md "Fuzzing").
//
// It builds a reference pool holding one structure of every family, each a
// registered crash subject (adapters/) so that "traverse everything and
// compare to what was written" is the subject's observe(): combining
// (pb-queue, pb-bytes-queue, pwf-queue, pwf-stack), nbMontage
// (montage-hashmap, montage-bytes-hashmap), Mirror (mirror-hashmap,
// mirror-bytes-hashmap), logging (logging-sfr-rbtree) and an OpLog
// (oplog-pb-queue). The subjects all call their root "subject": each one is
// created and attached under a root-name scope of its own
// (pmem/root_scope.h), so they share one pool and one recovery.
//
// Then it makes mutated copies of the pool file — single-byte flips at
// random and at every byte of the header slots, the root table and the root
// objects, at a sample of the structures' nodes and payloads (the blocks
// their recovery hooks mark); multi-byte garbage runs; truncations at page
// boundaries; zeroed pages — and runs each in a forked child (its own
// process group, killed at --timeout-ms): the deep check (check_pool), then
// Pool::open, a full traversal of every structure (observe() against the
// reference) and a few operations (their responses and the state after
// them against the reference's). Outcomes:
//   refused         check says damaged, and open throws or the damaged
//                   structure's root is left closed (its attach throws)
//   repaired        open repaired the header (a damaged slot), every
//                   structure holds exactly what was written
//   benign          check says sound, every structure exact
//   flagged-fine    check says damaged but every structure is exact (a
//                   leak, a damaged byte nothing reads)
//   flagged-wrong   check says damaged, yet a structure that opened
//                   answered data never written (the user was warned by
//                   check, not by the structure): counted and listed
// and the failures:
//   signal, hang (timeout), silent (check says sound and open, a
//   traversal or an operation fails or answers data never written),
//   child-error (the child exited without a result).
// Exit 0 when there is no failure, 1 otherwise, 2 usage.
//
// Thread safety: single-threaded; every case runs in its own process.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ferrite/cli.h"
#include "ferrite/crash/subject.h"
#include "ferrite/op.h"
#include "ferrite/persist/persist.h"
#include "ferrite/pmem/layout.h"
#include "ferrite/pmem/payload.h"
#include "ferrite/pmem/pool.h"
#include "ferrite/pmem/root_registry.h"
#include "ferrite/pmem/root_scope.h"
#include "pool_header.h"

namespace fuzz_pool_cmd {  // this file's names, apart in a unity build

namespace {

namespace fp = ferrite::pmem;
namespace fc = ferrite::crash;
namespace L = ferrite::pmem::layout;
using json = nlohmann::json;

// ---------------------------------------------------------------- self-test
// A structure whose recovery hook and traversal follow a damaged pointer
// without validating it (what every structure must NOT do): planted by
// --self-test, its flipped pointers must show up as signals, so the driver
// is seen to catch them.
struct FragileNode {
  std::uint64_t value;
  FragileNode* next;
};
struct Fragile {
  static constexpr std::uint32_t kTypeTag = 0xF022'0001;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "fuzz::Fragile";
  std::uint64_t count = 0;
  FragileNode* head = nullptr;
};
const bool fragile_registered = fp::register_root_type<Fragile>(
    [](fp::Pool&, Fragile* r, const std::function<void(void*)>& mark) {
      // Deliberately unvalidated (the self-test's point).
      for (FragileNode* n = r->head; n != nullptr; n = n->next) mark(n);
    });
constexpr int kFragileNodes = 64;
std::vector<std::int64_t> fragile_observe(fp::Pool& pool) {
  auto* r = pool.root<Fragile>("fragile");
  std::vector<std::int64_t> v;
  for (FragileNode* n = r->head; n != nullptr; n = n->next) v.push_back(static_cast<std::int64_t>(n->value));
  return v;
}

// ------------------------------------------------------------------ members
struct Family {
  const char* family;
  const char* structure;
  bool bytes;
};
// One structure of every family (the brief of issue 40).
constexpr Family kFamilies[] = {
    {"combining", "pb-queue", false},        {"combining", "pb-bytes-queue", true},
    {"combining", "pwf-queue", false},       {"combining", "pwf-stack", false},
    {"montage", "montage-hashmap", false},   {"montage", "montage-bytes-hashmap", true},
    {"mirror", "mirror-hashmap", false},     {"mirror", "mirror-bytes-hashmap", true},
    {"logging", "logging-sfr-rbtree", false}, {"oplog", "oplog-pb-queue", false},
};

struct Member {
  std::string family, structure, scope;
  const fc::SubjectInfo* info = nullptr;  // null: the self-test's Fragile
  fc::DataSizes sizes;
};

struct Options {
  std::uint64_t mutations = 2000;
  std::uint64_t seed = 1;
  int timeout_ms = 5000;
  int ops = 40;        // operations per structure in the reference
  int probe_ops = 6;   // operations per structure after each open
  std::size_t pool_mib = 24;
  std::string families = "all";
  std::string keep_failures;
  std::string dir = "/dev/shm";
  std::string json_path;
  bool json_stdout = false;
  bool self_test = false;
  bool quiet = false;
  long long only = -1;
};

std::vector<Member> choose_members(const Options& o) {
  std::set<std::string> want;
  if (o.families != "all") {
    std::stringstream ss(o.families);
    for (std::string f; std::getline(ss, f, ',');)
      if (!f.empty()) want.insert(f);
    for (const auto& f : want) {
      bool known = false;
      for (const auto& k : kFamilies) known = known || f == k.family || f == k.structure;
      if (!known) {
        std::fprintf(stderr, "ferrite fuzz-pool: --families: unknown family or structure '%s' (families: combining, "
                             "montage, mirror, logging, oplog; or a structure name)\n", f.c_str());
        throw ferrite::cli::Exit{2};
      }
    }
  }
  std::vector<Member> ms;
  for (const auto& k : kFamilies) {
    if (!want.empty() && want.count(k.family) == 0 && want.count(k.structure) == 0) continue;
    const fc::SubjectInfo* info = fc::find_subject(k.structure, "correct");
    if (info == nullptr) {
      std::fprintf(stderr, "ferrite fuzz-pool: no crash subject %s/correct in this program\n", k.structure);
      throw ferrite::cli::Exit{2};
    }
    Member m{k.family, k.structure, "f" + std::to_string(ms.size()) + "/", info, {}};
    if (k.bytes) m.sizes = {4, 40, 0, 300};
    ms.push_back(std::move(m));
  }
  if (o.self_test) ms.push_back(Member{"self-test", "fragile", "", nullptr, {}});
  return ms;
}

// --------------------------------------------------------- child processes
void emit(int fd, const json& j) {
  const std::string s = j.dump() + "\n";
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w <= 0) return;
    off += static_cast<std::size_t>(w);
  }
}

struct ChildResult {
  bool timed_out = false;
  int signal = 0;       // killed by this signal
  int exit_code = -1;
  std::vector<json> lines;  // what the child emitted
};

// Runs fn(fd) in a child (its own process group, so a deep check's
// grandchild is killed with it); fn's lines come back.
template <class Fn>
ChildResult run_child(int timeout_ms, Fn&& fn) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);
    ::close(fds[0]);
    int rc = 0;
    try {
      fn(fds[1]);
    } catch (const std::exception& e) {
      emit(fds[1], json{{"fatal", e.what()}});
      rc = 3;
    }
    ::_exit(rc);
  }
  ::setpgid(pid, pid);
  ::close(fds[1]);
  ChildResult r;
  std::string buf;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) continue;
    char tmp[65536];
    const ssize_t got = ::read(fds[0], tmp, sizeof tmp);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    buf.append(tmp, static_cast<std::size_t>(got));
  }
  if (r.timed_out) ::kill(-pid, SIGKILL);
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  ::kill(-pid, SIGKILL);  // a grandchild left behind (the deep check's)
  if (!r.timed_out) {
    if (WIFSIGNALED(st)) r.signal = WTERMSIG(st);
    else if (WIFEXITED(st)) r.exit_code = WEXITSTATUS(st);
  }
  std::stringstream ss(buf);
  for (std::string line; std::getline(ss, line);) {
    try {
      r.lines.push_back(json::parse(line));
    } catch (...) {
    }
  }
  return r;
}

const json* last_with(const ChildResult& r, const char* key) {
  for (auto it = r.lines.rbegin(); it != r.lines.rend(); ++it)
    if (it->contains(key)) return &*it;
  return nullptr;
}

std::unique_ptr<fc::Subject> make_subject(const Member& m) {
  auto s = m.info->make();
  s->set_data_sizes(m.sizes);
  return s;
}

fc::Op sync_op() {
  fc::Op o;
  o.kind = ferrite::op::kSync;
  return o;
}

std::uint64_t member_rng(const Options& o, std::size_t i, std::uint64_t salt) {
  return (o.seed + 1) * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xBF58476D1CE4E5B9ull ^ salt;
}

// The reference's contents, as the children report them.
struct Reference {
  std::vector<std::vector<std::int64_t>> state;        // observe() after open
  std::vector<std::vector<std::int64_t>> responses;    // probe ops' responses (has_value, value) pairs
  std::vector<std::vector<std::int64_t>> after;        // observe() after the probe ops
  std::vector<std::uint64_t> next_seq;                 // first seq of the probe ops
};

// In a child: open `path`, traverse every member, run the probe ops; one
// line per stage and a result line. `ref` null: record (reference run).
void traverse_child(int fd, const std::string& path, const std::vector<Member>& ms, const Options& o,
                    const Reference* ref, bool deep_check) {
  json res;
  if (deep_check) {
    emit(fd, json{{"stage", "check"}});
    const fp::CheckReport rep = fp::check_pool(path, true);
    const bool ok = rep.ok && ferrite::cli::header_sound(rep.header) && rep.damaged_roots.empty();
    res["check_ok"] = ok;
    std::string why;
    if (!rep.ok) why = rep.message;
    else if (!ferrite::cli::header_sound(rep.header)) why = "header: " + rep.header.message;
    else if (!rep.damaged_roots.empty()) why = "damaged root " + rep.damaged_roots.front();
    if (!rep.deep_skipped.empty()) why += (why.empty() ? "" : "; ") + std::string("deep skipped: ") + rep.deep_skipped;
    res["check_msg"] = why;
  }
  emit(fd, json{{"stage", "open"}});
  std::unique_ptr<fp::Pool> pool;
  try {
    pool = fp::Pool::open(path);
  } catch (const fp::PoolError& e) {
    res["open_ok"] = false;
    res["open_msg"] = e.what();
    res["open_code"] = std::string(fp::errc_name(e.code()));
    emit(fd, json{{"result", res}});
    return;
  }
  res["open_ok"] = true;
  res["header_state"] = std::string(fp::header_state_name(pool->header_health().state));
  json members = json::array();
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const Member& m = ms[i];
    emit(fd, json{{"stage", "traverse"}, {"member", i}});
    json mj{{"status", "exact"}};
    try {
      std::vector<std::int64_t> state, responses, after;
      std::uint64_t seq = ref ? ref->next_seq[i] : 0;
      if (m.info == nullptr) {
        state = fragile_observe(*pool);
      } else {
        fp::RootScope scope(m.scope);
        auto s = make_subject(m);
        s->recover(*pool, 1);
        state = s->observe();
        if (!ref || state == ref->state[i]) {
          emit(fd, json{{"stage", "ops"}, {"member", i}});
          std::uint64_t rng = member_rng(o, i, 0x5EED);
          if (!ref) seq = static_cast<std::uint64_t>(o.ops) + (s->buffered() ? 2 : 1);  // after the build's
          for (int k = 0; k < o.probe_ops; ++k) {
            const fc::Op op = s->next_op(0, rng);
            const fc::Response r = s->apply(0, seq++, op);
            responses.push_back(r.has_value ? 1 : 0);
            responses.push_back(r.value);
          }
          after = s->observe();
        }
        (void)s.release();  // CRASH: like a crash's child, the handle is abandoned (no teardown to time)
      }
      if (!ref) {
        mj["state"] = state;
        mj["responses"] = responses;
        mj["after"] = after;
        mj["next_seq"] = seq - static_cast<std::uint64_t>(o.probe_ops);
      } else if (state != ref->state[i]) {
        mj["status"] = "wrong";
        mj["msg"] = "traversal: " + std::to_string(state.size()) + " elements, the reference " +
                    std::to_string(ref->state[i].size());
      } else if (m.info != nullptr && (responses != ref->responses[i] || after != ref->after[i])) {
        mj["status"] = "wrong-op";
        mj["msg"] = responses != ref->responses[i] ? "an operation's response differs from the reference's"
                                                   : "the state after the operations differs from the reference's";
      }
    } catch (const fp::PoolError& e) {
      mj["status"] = "refused";
      mj["msg"] = e.what();
    } catch (const std::exception& e) {
      mj["status"] = "error";
      mj["msg"] = e.what();
    }
    members.push_back(mj);
  }
  res["members"] = members;
  emit(fd, json{{"result", res}});
  // No teardown: structures' background threads and handles are abandoned.
  std::fflush(nullptr);
  ::_exit(0);
}

// ---------------------------------------------------------------- the image
std::vector<char> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Writes img to path sparsely (all-zero pages are holes): most of a pool is
// zero, and writing only the rest is what makes thousands of cases cheap.
void write_sparse(const std::string& path, const std::vector<char>& img) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  if (::ftruncate(fd, static_cast<off_t>(img.size())) != 0) {
    ::close(fd);
    throw std::runtime_error("ftruncate " + path + ": " + std::strerror(errno));
  }
  static const std::vector<char> zero(L::kPage, 0);
  for (std::size_t off = 0; off < img.size(); off += L::kPage) {
    const std::size_t n = std::min(L::kPage, img.size() - off);
    if (std::memcmp(img.data() + off, zero.data(), n) == 0) continue;
    if (::pwrite(fd, img.data() + off, n, static_cast<off_t>(off)) != static_cast<ssize_t>(n)) {
      ::close(fd);
      throw std::runtime_error("pwrite " + path + ": " + std::strerror(errno));
    }
  }
  ::close(fd);
}

struct Block {
  std::uint64_t off, size;
  bool payload;
};

// Where a byte is (the report's regions).
struct Regions {
  std::uint64_t chunk_map_end = 0, heap_offset = 0;
  std::vector<fp::RootInfo> roots;
  std::vector<Block> blocks;  // sorted by offset, traced by the hooks (root objects excluded)
  std::string of(std::uint64_t at) const {
    if (at < 2 * sizeof(L::HeaderSlot)) {
      const std::uint64_t in = at % sizeof(L::HeaderSlot);
      const std::uint64_t rt = offsetof(L::HeaderSlot, roots);
      return in >= rt && in < rt + sizeof(L::HeaderSlot::roots) ? "root-table" : "header";
    }
    if (at < chunk_map_end) return "chunk-map";
    if (at < heap_offset) return "free";
    for (const auto& r : roots)
      if (at >= r.offset && at < r.offset + r.size) return "root-object";
    auto it = std::upper_bound(blocks.begin(), blocks.end(), at, [](std::uint64_t a, const Block& b) { return a < b.off; });
    if (it != blocks.begin()) {
      --it;
      if (at < it->off + it->size) return it->payload ? "payload" : "node";
    }
    return "free";
  }
};

struct Mutation {
  std::string kind;
  std::uint64_t at = 0, len = 0;  // flip: at; garbage/zero: [at, at+len); truncate: new size at
  std::uint8_t x = 0;             // flip: xor mask
  std::uint64_t seed = 0;         // garbage bytes
};

void apply_mutation(const Mutation& m, std::vector<char>& img) {
  if (m.kind == "truncate") {
    img.resize(m.at);
  } else if (m.kind == "zero-page") {
    std::memset(img.data() + m.at, 0, std::min<std::uint64_t>(m.len, img.size() - m.at));
  } else if (m.kind == "garbage") {
    std::mt19937_64 g(m.seed);
    for (std::uint64_t k = 0; k < m.len && m.at + k < img.size(); ++k) img[m.at + k] = static_cast<char>(g());
  } else {
    img[m.at] = static_cast<char>(static_cast<std::uint8_t>(img[m.at]) ^ m.x);
  }
}

// The cases: a quota of --mutations per kind; a kind with fewer candidates
// than its quota takes every candidate (the rest goes to random flips).
std::vector<Mutation> plan(const Options& o, const Regions& rg, std::size_t file_size) {
  std::mt19937_64 rng(o.seed);
  auto nz = [&] { return static_cast<std::uint8_t>(1 + rng() % 255); };
  std::vector<std::vector<std::uint64_t>> cand(6);
  // 0 header + root table (both slots), 1 root objects, 2 nodes/payloads,
  // 3 truncation points, 4 zero pages
  for (std::uint64_t b = 0; b < 2 * sizeof(L::HeaderSlot); ++b) cand[0].push_back(b);
  for (const auto& r : rg.roots)
    for (std::uint64_t b = 0; b < r.size; ++b) cand[1].push_back(r.offset + b);
  for (const auto& bl : rg.blocks)
    for (std::uint64_t b = 0; b < bl.size; ++b) cand[2].push_back(bl.off + b);
  for (std::uint64_t p = 0; p < file_size; p += L::kPage) cand[3].push_back(p);
  for (std::uint64_t p = 0; p < file_size; p += L::kPage) cand[4].push_back(p);
  const std::uint64_t n = o.mutations;
  const double share[] = {0.25, 0.15, 0.20, 0.07, 0.08};
  std::vector<Mutation> out;
  auto take = [&](std::vector<std::uint64_t>& c, std::uint64_t quota, auto&& make) {
    if (c.empty() || quota == 0) return;
    if (quota >= c.size()) {
      for (auto v : c) out.push_back(make(v));
    } else {  // evenly spaced from a random start: every part of the region is sampled
      const double stride = static_cast<double>(c.size()) / static_cast<double>(quota);
      const double start = static_cast<double>(rng() % 1000) / 1000.0 * stride;
      for (std::uint64_t k = 0; k < quota; ++k) out.push_back(make(c[static_cast<std::size_t>(start + stride * k)]));
    }
  };
  take(cand[0], static_cast<std::uint64_t>(n * share[0]), [&](std::uint64_t a) { return Mutation{"flip-header", a, 1, nz(), 0}; });
  take(cand[1], static_cast<std::uint64_t>(n * share[1]), [&](std::uint64_t a) { return Mutation{"flip-root-object", a, 1, nz(), 0}; });
  take(cand[2], static_cast<std::uint64_t>(n * share[2]), [&](std::uint64_t a) { return Mutation{"flip-node", a, 1, nz(), 0}; });
  take(cand[3], static_cast<std::uint64_t>(n * share[3]), [&](std::uint64_t a) { return Mutation{"truncate", a, 0, 0, 0}; });
  take(cand[4], static_cast<std::uint64_t>(n * share[4]), [&](std::uint64_t a) { return Mutation{"zero-page", a, L::kPage, 0, 0}; });
  // Garbage runs: a tenth of the cases, starting at a byte that is in use
  // (header, root objects, nodes) half of the time.
  const std::uint64_t garbage = n / 10;
  for (std::uint64_t k = 0; k < garbage; ++k) {
    std::uint64_t at;
    const auto& c = cand[static_cast<std::size_t>(rng() % 3)];
    if (rng() % 2 == 0 && !c.empty()) at = c[rng() % c.size()];
    else at = rng() % file_size;
    const std::uint64_t len = 2 + rng() % 63;
    out.push_back(Mutation{"garbage", at, len, 0, rng()});
  }
  // Random flips: whatever is left.
  while (out.size() < n) out.push_back(Mutation{"flip-random", rng() % file_size, 1, nz(), 0});
  if (out.size() > n) out.resize(n);
  return out;
}

std::string describe(const Mutation& m) {
  char b[160];
  if (m.kind == "truncate") std::snprintf(b, sizeof b, "truncate to 0x%llx", static_cast<unsigned long long>(m.at));
  else if (m.kind == "zero-page" || m.kind == "garbage")
    std::snprintf(b, sizeof b, "%s [0x%llx, +%llu)", m.kind.c_str(), static_cast<unsigned long long>(m.at),
                  static_cast<unsigned long long>(m.len));
  else std::snprintf(b, sizeof b, "%s at 0x%llx ^ 0x%02x", m.kind.c_str(), static_cast<unsigned long long>(m.at), m.x);
  return b;
}

constexpr const char* kFailures[] = {"signal", "hang", "silent", "child-error"};
bool is_failure(const std::string& o) {
  for (const char* f : kFailures)
    if (o == f) return true;
  return false;
}

// ------------------------------------------------------------------ the run
int run(const Options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<Member> ms = choose_members(o);
  std::string dir = o.dir + "/ferrite-fuzz-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    std::fprintf(stderr, "ferrite fuzz-pool: cannot make a directory in %s: %s\n", o.dir.c_str(), std::strerror(errno));
    return 2;
  }
  struct Cleanup {
    std::string d;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } cleanup{dir};
  const std::string ref_path = dir + "/reference.pool", case_path = dir + "/case.pool";
  auto say = [&](const std::string& s) {
    if (!o.quiet) std::fprintf(stderr, "fuzz-pool: %s\n", s.c_str());
  };
  const int setup_timeout = std::max(o.timeout_ms * 20, 60000);

  // 1. The reference pool: every member created and filled, the buffered
  // ones synced.
  ChildResult built = run_child(setup_timeout, [&](int fd) {
    auto pool = fp::Pool::create(ref_path, o.pool_mib << 20);
    std::vector<std::unique_ptr<fc::Subject>> subjects;
    for (std::size_t i = 0; i < ms.size(); ++i) {
      const Member& m = ms[i];
      if (m.info == nullptr) {
        auto* r = pool->create_root<Fragile>("fragile");
        FragileNode* prev = nullptr;
        for (int k = 0; k < kFragileNodes; ++k) {
          auto* nd = static_cast<FragileNode*>(pool->heap().alloc(sizeof(FragileNode), 0));
          nd->value = static_cast<std::uint64_t>(1000 + k);
          nd->next = nullptr;
          ferrite::persist::persist_range(nd, sizeof *nd);
          if (prev) {
            prev->next = nd;
            ferrite::persist::persist_range(prev, sizeof *prev);
          } else {
            r->head = nd;
          }
          prev = nd;
        }
        r->count = kFragileNodes;
        ferrite::persist::persist_range(r, sizeof *r);
        continue;
      }
      fp::RootScope scope(m.scope);
      auto s = make_subject(m);
      s->create(*pool, 1);
      std::uint64_t rng = member_rng(o, i, 0);
      std::uint64_t seq = 1;
      for (int k = 0; k < o.ops; ++k) s->apply(0, seq++, s->next_op(0, rng));
      if (s->buffered()) s->apply(0, seq++, sync_op());  // nbMontage: durable up to here
      subjects.push_back(std::move(s));
    }
    for (auto& s : subjects) (void)s.release();  // no teardown (background threads); everything is synced
    emit(fd, json{{"built", true}});
    std::fflush(nullptr);
    ::_exit(0);
  });
  if (!last_with(built, "built")) {
    const json* f = last_with(built, "fatal");
    std::fprintf(stderr, "ferrite fuzz-pool: building the reference pool failed (%s)\n",
                 f ? (*f)["fatal"].get<std::string>().c_str()
                   : (built.signal ? ("signal " + std::to_string(built.signal)).c_str() : "no result"));
    return 1;
  }
  // 2. Open it once (recovery) and record what every member holds; the
  // file after that open is the reference image.
  Reference ref;
  auto record = [&](const std::string& path, Reference& into) -> std::string {
    ChildResult r = run_child(setup_timeout, [&](int fd) { traverse_child(fd, path, ms, o, nullptr, false); });
    const json* res = last_with(r, "result");
    if (!res) return "no result (signal " + std::to_string(r.signal) + ")";
    const json& j = (*res)["result"];
    if (!j["open_ok"].get<bool>()) return "open: " + j["open_msg"].get<std::string>();
    into = Reference{};
    for (std::size_t i = 0; i < ms.size(); ++i) {
      const json& m = j["members"][i];
      if (m["status"] != "exact") return ms[i].structure + ": " + m.value("msg", std::string("?"));
      into.state.push_back(m["state"].get<std::vector<std::int64_t>>());
      into.responses.push_back(m["responses"].get<std::vector<std::int64_t>>());
      into.after.push_back(m["after"].get<std::vector<std::int64_t>>());
      into.next_seq.push_back(m["next_seq"].get<std::uint64_t>());
    }
    return "";
  };
  // The recording run writes (recovery, probe ops) to its file: run it on
  // copies, and take as reference the file after one plain open.
  {
    ChildResult r = run_child(setup_timeout, [&](int fd) {
      { auto pool = fp::Pool::open(ref_path); }
      emit(fd, json{{"opened", true}});
      ::_exit(0);
    });
    if (!last_with(r, "opened")) {
      std::fprintf(stderr, "ferrite fuzz-pool: reopening the reference pool failed\n");
      return 1;
    }
  }
  const std::vector<char> good = read_all(ref_path);
  write_sparse(case_path, good);
  if (std::string e = record(case_path, ref); !e.empty()) {
    std::fprintf(stderr, "ferrite fuzz-pool: the reference pool does not traverse: %s\n", e.c_str());
    return 1;
  }
  {  // stable: a second open of the same image traverses the same
    Reference again;
    write_sparse(case_path, good);
    if (std::string e = record(case_path, again); !e.empty() || again.state != ref.state ||
                                                  again.responses != ref.responses || again.after != ref.after) {
      std::fprintf(stderr, "ferrite fuzz-pool: the reference pool is not stable across opens (%s)\n",
                   e.empty() ? "contents differ" : e.c_str());
      return 1;
    }
  }
  // 3. Regions: the hooks' traces name the nodes and payloads.
  Regions rg;
  {
    const auto* h = reinterpret_cast<const L::HeaderSlot*>(good.data());
    rg.chunk_map_end = L::kChunkMapOffset + 4 * h->chunk_count;
    rg.heap_offset = h->heap_offset;
    write_sparse(case_path, good);
    ChildResult r = run_child(setup_timeout, [&](int fd) {
      fp::PoolOptions po;
      po.recover = false;
      auto pool = fp::Pool::open(case_path, po);
      json roots = json::array(), blocks = json::array();
      std::set<std::uint64_t> seen;
      for (const auto& ri : pool->roots()) {
        roots.push_back({ri.name, ri.offset, ri.size});
        fp::RootTypeEntry e;
        if (!fp::find_root_type(ri.type_tag, ri.type_version, &e)) continue;
        e.hook(*pool, pool->at<void>(ri.offset), [&](void* p) {
          if (p == nullptr || !pool->contains(p)) return;
          const std::size_t bs = pool->heap().block_at(p);
          const std::uint64_t off = pool->offset_of(p);
          if (bs == 0 || !seen.insert(off).second) return;
          const bool payload = fp::payload_problem(*pool, off).empty();
          blocks.push_back({off, bs, payload});
        });
      }
      emit(fd, json{{"roots", roots}, {"blocks", blocks}});
      ::_exit(0);
    });
    const json* j = last_with(r, "roots");
    if (!j) {
      std::fprintf(stderr, "ferrite fuzz-pool: tracing the reference pool failed\n");
      return 1;
    }
    for (const auto& x : (*j)["roots"]) rg.roots.push_back(fp::RootInfo{x[0].get<std::string>(), x[1].get<std::uint64_t>(), 0, 0, x[2].get<std::uint64_t>()});
    for (const auto& x : (*j)["blocks"]) rg.blocks.push_back(Block{x[0].get<std::uint64_t>(), x[1].get<std::uint64_t>(), x[2].get<bool>()});
    std::sort(rg.blocks.begin(), rg.blocks.end(), [](const Block& a, const Block& b) { return a.off < b.off; });
  }
  std::uint64_t payloads = 0;
  for (const auto& b : rg.blocks) payloads += b.payload ? 1 : 0;
  say("reference pool: " + std::to_string(good.size() >> 20) + " MiB, " + std::to_string(ms.size()) +
      " structures, " + std::to_string(rg.roots.size()) + " roots, " + std::to_string(rg.blocks.size() - payloads) +
      " nodes, " + std::to_string(payloads) + " payloads");

  // 4. The cases.
  const std::vector<Mutation> cases = plan(o, rg, good.size());
  std::map<std::string, std::uint64_t> outcomes;
  std::map<std::string, std::map<std::string, std::uint64_t>> by_kind, by_region, by_family;
  json failures = json::array(), warned = json::array();
  std::uint64_t done = 0;
  const auto tc = std::chrono::steady_clock::now();
  auto last_progress = tc;
  if (!o.keep_failures.empty()) std::filesystem::create_directories(o.keep_failures);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    if (o.only >= 0 && static_cast<long long>(c) != o.only) continue;
    const Mutation& m = cases[c];
    std::vector<char> img = good;
    apply_mutation(m, img);
    write_sparse(case_path, img);
    ChildResult r = run_child(o.timeout_ms, [&](int fd) { traverse_child(fd, case_path, ms, o, &ref, true); });
    std::string outcome, detail, where;
    const json* stage = last_with(r, "stage");
    if (stage) {
      where = (*stage)["stage"].get<std::string>();
      if (stage->contains("member")) where += " " + ms[(*stage)["member"].get<std::size_t>()].structure;
    }
    const json* res = last_with(r, "result");
    std::string family = "pool";
    if (stage && stage->contains("member")) family = ms[(*stage)["member"].get<std::size_t>()].family;
    if (r.timed_out) {
      outcome = "hang";
      detail = "no answer within " + std::to_string(o.timeout_ms) + " ms, in " + where;
    } else if (r.signal != 0) {
      outcome = "signal";
      detail = std::string(strsignal(r.signal)) + " in " + where;
    } else if (!res) {
      outcome = "child-error";
      const json* f = last_with(r, "fatal");
      detail = (f ? (*f)["fatal"].get<std::string>() : "exit " + std::to_string(r.exit_code)) + " in " + where;
    } else {
      const json& j = (*res)["result"];
      const bool check_ok = j["check_ok"].get<bool>();
      std::string bad;  // a member that answered wrong / failed
      bool wrong = false, refused = false;
      if (j["open_ok"].get<bool>()) {
        for (std::size_t i = 0; i < ms.size(); ++i) {
          const json& mj = j["members"][i];
          const std::string st = mj["status"];
          if (st == "exact") continue;
          if (bad.empty()) {
            bad = ms[i].structure + ": " + st + ": " + mj.value("msg", std::string());
            family = ms[i].family;
          }
          if (st == "wrong" || st == "wrong-op") wrong = true;
          else refused = true;
        }
      }
      if (check_ok) {
        if (!j["open_ok"].get<bool>()) {
          if (j["open_code"] == "kBaseUnavailable") outcome = "skipped";  // the base is taken here: not a verdict
          else {
            outcome = "silent";
            detail = "check says sound, open throws: " + j["open_msg"].get<std::string>();
          }
        } else if (wrong || refused) {
          outcome = "silent";
          detail = "check says sound; " + bad;
        } else {
          outcome = j["header_state"] != "in-sync" ? "repaired" : "benign";
        }
      } else {
        if (!j["open_ok"].get<bool>() || (refused && !wrong)) outcome = "refused";
        else if (wrong) {
          outcome = "flagged-wrong";
          detail = "check: " + j["check_msg"].get<std::string>() + "; " + bad;
        } else {
          outcome = j["header_state"] != "in-sync" ? "repaired" : "flagged-fine";
        }
      }
    }
    const std::string region = m.kind == "truncate" ? rg.of(m.at ? m.at - 1 : 0) : rg.of(m.at);
    outcomes[outcome]++;
    by_kind[m.kind][outcome]++;
    by_region[region][outcome]++;
    if (is_failure(outcome) || outcome == "flagged-wrong") {
      by_family[family][outcome]++;
      json fj{{"case", c},          {"outcome", outcome}, {"mutation", describe(m)}, {"region", region},
              {"family", family},   {"detail", detail},
              {"reproduce", "ferrite fuzz-pool --seed " + std::to_string(o.seed) + " --mutations " +
                                std::to_string(o.mutations) + " --families " + o.families +
                                (o.self_test ? " --self-test" : "") + " --only " + std::to_string(c)}};
      if (!o.keep_failures.empty()) {
        const std::string keep = o.keep_failures + "/case-" + std::to_string(c) + ".pool";
        write_sparse(keep, img);
        fj["pool"] = keep;
        std::ofstream(o.keep_failures + "/case-" + std::to_string(c) + ".txt")
            << outcome << ": " << describe(m) << " (" << region << "): " << detail << "\n  " << fj["reproduce"].get<std::string>()
            << "\n  ferrite check " << keep << "\n";
      }
      if (is_failure(outcome)) {
        if (failures.size() < 200) failures.push_back(fj);
        if (!o.quiet) std::fprintf(stderr, "fuzz-pool: FAILURE case %zu: %s: %s (%s, %s): %s\n", c, outcome.c_str(),
                                   describe(m).c_str(), region.c_str(), family.c_str(), detail.c_str());
      } else if (warned.size() < 200) {
        warned.push_back(fj);
      }
    }
    ++done;
    const auto now = std::chrono::steady_clock::now();
    if (!o.quiet && now - last_progress > std::chrono::seconds(5)) {
      last_progress = now;
      const double s = std::chrono::duration<double>(now - tc).count();
      std::fprintf(stderr, "fuzz-pool: %llu/%zu cases, %.0f/s\n", static_cast<unsigned long long>(done), cases.size(),
                   done / s);
    }
  }
  const double case_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - tc).count();
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::uint64_t nfail = 0;
  for (const char* f : kFailures) nfail += outcomes.count(f) ? outcomes[f] : 0;

  json out;
  out["command"] = "ferrite fuzz-pool";
  out["seed"] = o.seed;
  out["mutations"] = done;
  out["timeout_ms"] = o.timeout_ms;
  out["pool_bytes"] = good.size();
  json structs = json::array();
  for (const auto& m : ms) structs.push_back({{"family", m.family}, {"structure", m.structure}});
  out["structures"] = structs;
  out["roots"] = rg.roots.size();
  out["nodes"] = rg.blocks.size() - payloads;
  out["payloads"] = payloads;
  for (const char* k : {"refused", "repaired", "benign", "flagged-fine", "flagged-wrong", "skipped", "signal", "hang",
                        "silent", "child-error"})
    out["outcomes"][k] = outcomes.count(k) ? outcomes[k] : 0;
  out["by_kind"] = by_kind;
  out["by_region"] = by_region;
  out["failures_by_family"] = by_family;
  out["failures"] = failures;
  out["flagged_wrong"] = warned;
  out["failures_total"] = nfail;
  out["seconds"] = total_s;
  out["cases_per_second"] = case_s > 0 ? done / case_s : 0.0;
  if (!o.json_path.empty()) std::ofstream(o.json_path) << out.dump(2) << "\n";
  if (o.json_stdout) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("fuzz-pool: %llu mutated pools (seed %llu) in %.1f s, %.0f/s:",
                static_cast<unsigned long long>(done), static_cast<unsigned long long>(o.seed), total_s,
                case_s > 0 ? done / case_s : 0.0);
    for (const auto& [k, v] : outcomes) std::printf(" %s=%llu", k.c_str(), static_cast<unsigned long long>(v));
    std::printf("\nfuzz-pool: %llu failure(s) (signal, hang, silent, child-error)\n",
                static_cast<unsigned long long>(nfail));
  }
  return nfail == 0 ? 0 : 1;
}

void setup_fuzz_pool(CLI::App* sub) {
  auto o = std::make_shared<Options>();
  sub->add_option("--mutations", o->mutations, "Number of mutated pools")->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed of the mutations and of the reference's operations")->capture_default_str();
  sub->add_option("--timeout-ms", o->timeout_ms, "Time limit of each case (check, open, traversal, operations)")
      ->capture_default_str()
      ->check(CLI::Range(100, 600000));
  sub->add_option("--families", o->families,
                  "Comma-separated families (combining, montage, mirror, logging, oplog) or structures, or all")
      ->capture_default_str();
  sub->add_option("--ops", o->ops, "Operations per structure in the reference pool")->capture_default_str()->check(CLI::Range(0, 100000));
  sub->add_option("--probe-ops", o->probe_ops, "Operations per structure after each open")->capture_default_str()->check(CLI::Range(0, 1000));
  sub->add_option("--pool-mib", o->pool_mib, "Reference pool size (MiB)")->capture_default_str()->check(CLI::Range(2, 4096));
  sub->add_option("--keep-failures", o->keep_failures,
                  "Directory: each failing case's pool file and a one-line reproduction");
  sub->add_option("--dir", o->dir, "Where the reference and case files live")->capture_default_str();
  sub->add_option("--json-out", o->json_path, "Write the JSON summary to this file");
  sub->add_flag("--json", o->json_stdout, "JSON summary on stdout");
  sub->add_option("--only", o->only, "Run only this case number (a reproduction)");
  sub->add_flag("--self-test", o->self_test,
                "Also plant fuzz::Fragile, whose hook and traversal follow pointers unvalidated: its damage must "
                "show up as failures (signals)");
  sub->add_flag("--quiet", o->quiet, "No progress on stderr");
  sub->callback([o] { throw ferrite::cli::Exit{run(*o)}; });
}

}  // namespace

}  // namespace fuzz_pool_cmd

FERRITE_REGISTER_COMMAND(fuzz-pool, "Fuzz a pool file to the byte: mutated copies checked, opened, traversed",
                         fuzz_pool_cmd::setup_fuzz_pool);
