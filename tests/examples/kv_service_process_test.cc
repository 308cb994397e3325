// tests/examples/kv_service_process_test.cc — the key-value service
// (examples/kv_service.cc), for each map engine, killed with SIGKILL at
// random 100 times: after every restart the service's map is exactly the
// acknowledged state — every acknowledged put and del is there, nothing
// else, with at most the one command in flight at the kill either applied or
// not. Keys of 1..64 random bytes, values of 0..4096 (the empty one among
// them), from a small key set so puts replace and dels hit.
//
// The randomness: the commands, their sizes, and when the kill comes (after
// a random number of acknowledged commands, with the next one sent but not
// acknowledged, or — one run in four — unsent). No sleep synchronises
// anything: the test waits for each acknowledgement line.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/scale.h"
#include "common/temp_pool.h"

namespace kv_service_process_test {  // this file's names, apart in a unity build

namespace {

// The in-tree build's kv-service, or FERRITE_KV_SERVICE (the one
// scripts/test-install.sh builds out of the tree with find_package).
std::string service_path() {
  if (const char* p = std::getenv("FERRITE_KV_SERVICE")) return p;
  const std::string cli = FERRITE_CLI_PATH;
  return cli.substr(0, cli.rfind('/') + 1) + "kv-service";
}

std::string hex(const std::string& s) {
  if (s.empty()) return "-";
  static const char* d = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) {
    h.push_back(d[c >> 4]);
    h.push_back(d[c & 15]);
  }
  return h;
}

std::string unhex(const std::string& h) {
  if (h == "-") return "";
  std::string s;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) s.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return s;
}

// One running service: commands on its stdin, replies from its stdout.
class Service {
 public:
  Service(const std::string& pool, const std::string& engine) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      const std::string path = service_path();
      ::execl(path.c_str(), path.c_str(), pool.c_str(), "--engine", engine.c_str(), "--pool-size", "67108864",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = ::fdopen(in[1], "w");
    from_ = ::fdopen(out[0], "r");
  }
  ~Service() {
    if (to_ != nullptr) std::fclose(to_);
    if (from_ != nullptr) std::fclose(from_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return pid_ > 0 && to_ != nullptr && from_ != nullptr; }
  void send(const std::string& line) {
    std::fputs((line + "\n").c_str(), to_);
    std::fflush(to_);
  }
  // The next reply line ("" at EOF: the service died).
  std::string reply() {
    std::string r;
    int c;
    while ((c = std::fgetc(from_)) != EOF && c != '\n') r.push_back(static_cast<char>(c));
    return r;
  }
  std::string call(const std::string& line) {
    send(line);
    return reply();
  }
  // SIGKILL; returns how it ended (128 + signal, or the exit code).
  int kill() {
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
  }

 private:
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

struct Cmd {
  bool put = true;
  std::string key, value;
};

// The acknowledged state, and the command in flight at the kill (applied
// or not).
struct Model {
  std::map<std::string, std::string> kv;
  std::optional<Cmd> in_flight;
  void apply(const Cmd& c) {
    if (c.put) kv[c.key] = c.value;
    else kv.erase(c.key);
  }
};

// The service's whole ordered contents ("scan - - N": from the empty key,
// no upper bound), as the pairs it sent; nullopt when the reply is malformed.
std::optional<std::vector<std::pair<std::string, std::string>>> scan_all(Service& s) {
  s.send("scan - - 1000000");
  std::vector<std::pair<std::string, std::string>> out;
  for (;;) {
    const std::string r = s.reply();
    if (r.rfind("end ", 0) == 0) {
      if (r != "end " + std::to_string(out.size())) return std::nullopt;
      return out;
    }
    if (r.rfind("pair ", 0) != 0) return std::nullopt;
    const auto sp = r.find(' ', 5);
    if (sp == std::string::npos) return std::nullopt;
    out.emplace_back(unhex(r.substr(5, sp - 5)), unhex(r.substr(sp + 1)));
  }
}

// Checks the restarted service against the model (either outcome of the
// command in flight); adopts the outcome it finds. An ordered engine's scan
// must list the same state in ascending key order. Returns "" or what is
// wrong.
std::string verify(Service& s, Model& m, const std::vector<std::string>& keys, bool ordered) {
  Model with = m;
  if (m.in_flight) with.apply(*m.in_flight);
  bool matches_without = true, matches_with = true;
  for (const auto& k : keys) {
    const std::string r = s.call("get " + hex(k));
    auto expect = [&](const Model& x) {
      auto it = x.kv.find(k);
      return it == x.kv.end() ? std::string("absent") : "value " + hex(it->second);
    };
    if (r.empty()) return "the restarted service died (get)";
    matches_without = matches_without && r == expect(m);
    matches_with = matches_with && r == expect(with);
    if (!matches_without && !matches_with)
      return "key " + hex(k) + ": got '" + r.substr(0, 80) + "', acknowledged state has '" + expect(m).substr(0, 80) +
             "'" + (m.in_flight ? " (or '" + expect(with).substr(0, 80) + "' with the command in flight)" : "");
  }
  if (ordered) {
    const auto pairs = scan_all(s);
    if (!pairs) return "a malformed scan reply";
    auto same = [&](const Model& x) {
      return pairs->size() == x.kv.size() && std::equal(pairs->begin(), pairs->end(), x.kv.begin(), [](auto& a, auto& b) {
               return a.first == b.first && a.second == b.second;
             });
    };
    matches_without = matches_without && same(m);
    matches_with = matches_with && same(with);
    if (!matches_without && !matches_with)
      return "scan listed " + std::to_string(pairs->size()) + " pairs, not the acknowledged state's " +
             std::to_string(m.kv.size()) + " in key order";
  }
  const std::string sz = s.call("size");
  if (matches_without && sz == "size " + std::to_string(m.kv.size())) {
    m.in_flight.reset();
    return "";
  }
  if (matches_with && sz == "size " + std::to_string(with.kv.size())) {
    m = with;
    m.in_flight.reset();
    return "";
  }
  return "'" + sz + "' but the acknowledged state holds " + std::to_string(m.kv.size()) + " keys" +
         (m.in_flight ? " (" + std::to_string(with.kv.size()) + " with the command in flight)" : "");
}

void kill_and_restart(const std::string& engine, bool ordered = false) {
  ferrite::test::TempPath pool("kv-" + engine);
  std::mt19937_64 rng(0x6b76 + engine.size());
  std::vector<std::string> keys;
  for (int i = 0; i < 24; ++i) {
    std::string k(1 + rng() % 64, '\0');
    for (auto& c : k) c = static_cast<char>(rng());
    keys.push_back(k);
  }
  auto value = [&] {
    const std::size_t n = rng() % 8 == 0 ? 0 : rng() % 4097;
    std::string v(n, '\0');
    for (auto& c : v) c = static_cast<char>(rng());
    return v;
  };
  Model m;
  const int kills = ferrite::test::scaled(100, 10);
  for (int run = 0; run <= kills; ++run) {
    Service s(pool.path, engine);
    ASSERT_TRUE(s.ok());
    if (run > 0) {
      const std::string why = verify(s, m, keys, ordered);
      ASSERT_EQ(why, "") << engine << ", after kill " << run;
    }
    if (run == kills) break;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      Cmd c{rng() % 4 != 0, keys[rng() % keys.size()], ""};
      if (c.put) c.value = value();
      const std::string r = s.call(c.put ? "put " + hex(c.key) + " " + hex(c.value) : "del " + hex(c.key));
      ASSERT_TRUE(r == "inserted" || r == "replaced" || r == "removed" || r == "absent") << engine << ": " << r;
      if (c.put) ASSERT_EQ(r == "inserted", m.kv.count(c.key) == 0) << engine << ": " << r;
      else ASSERT_EQ(r == "removed", m.kv.count(c.key) == 1) << engine << ": " << r;
      m.apply(c);
    }
    if (rng() % 4 != 0) {  // one command in flight at the kill
      Cmd c{rng() % 4 != 0, keys[rng() % keys.size()], ""};
      if (c.put) c.value = value();
      s.send(c.put ? "put " + hex(c.key) + " " + hex(c.value) : "del " + hex(c.key));
      m.in_flight = c;
    }
    EXPECT_EQ(s.kill(), 128 + SIGKILL);
  }
}

}  // namespace

TEST(KvService, MirrorHashKeepsExactlyTheAcknowledgedStateAcross100Kills) { kill_and_restart("mirror-hash"); }
TEST(KvService, MontageHashKeepsExactlyTheAcknowledgedStateAcross100Kills) { kill_and_restart("montage-hash"); }
TEST(KvService, MirrorOrderedKeepsExactlyTheAcknowledgedStateAndItsOrderAcross100Kills) {
  kill_and_restart("mirror-ordered", /*ordered=*/true);
}
TEST(KvService, MontageOrderedKeepsExactlyTheAcknowledgedStateAndItsOrderAcross100Kills) {
  kill_and_restart("montage-ordered", /*ordered=*/true);
}

TEST(KvService, BadInputGetsAClearErrorAndChangesNothing) {
  ferrite::test::TempPath pool("kv-bad");
  Service s(pool.path, "mirror-hash");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.call("put 6b 76"), "inserted");
  EXPECT_EQ(s.call("put 6b"), "error: put KEY VALUE, both hex");
  EXPECT_EQ(s.call("put zz 00"), "error: put KEY VALUE, both hex");
  EXPECT_EQ(s.call("frobnicate"), "error: unknown command 'frobnicate' (put, get, del, scan, size, quit)");
  EXPECT_EQ(s.call("scan - - 10"), "error: engine 'mirror-hash' is not ordered (scan needs an ordered engine)");
  EXPECT_EQ(s.call("scan 6b"), "error: scan LO HI N (LO, HI hex, HI '-' for no bound, N a count)");
  EXPECT_EQ(s.call("get 6b"), "value 76");
  EXPECT_EQ(s.call("size"), "size 1");
  EXPECT_EQ(s.call("quit"), "bye");
  // A pool holding the other engine's map is refused with a message.
  Service other(pool.path, "montage-hash");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other.reply(), "");  // no reply: it exited
}

}  // namespace kv_service_process_test
